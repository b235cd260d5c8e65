package p2pwire

import (
	"net/netip"
	"strconv"
)

// Hole punching (docs/protocol/p2p.md §20). A peer asks the hub for a punch
// to another peer over TLS (PUNCH_REQUEST); the hub sends both sides an
// offer (PUNCH_OFFER) with a fresh pair key and the other side's
// candidates; both sides probe every candidate with sealed datagrams
// (PUNCH_PROBE, answered by PUNCH_ACK) or connect over TCP at once; each
// reports the outcome to the hub (PUNCH_RESULT).

// Transport is what a punch opens: a UDP path or a TCP connection.
type Transport uint8

// The transports.
const (
	TransportUDP Transport = 1
	TransportTCP Transport = 2
)

// String returns "udp", "tcp" or "transport N".
func (t Transport) String() string {
	switch t {
	case TransportUDP:
		return "udp"
	case TransportTCP:
		return "tcp"
	}
	return "transport " + strconv.Itoa(int(t))
}

// Valid reports whether t is TransportUDP or TransportTCP.
func (t Transport) Valid() bool { return t == TransportUDP || t == TransportTCP }

// PunchOutcome is what a PUNCH_RESULT reports.
type PunchOutcome uint8

// The outcomes.
const (
	PunchUp     PunchOutcome = 1 // the direct path is confirmed both ways
	PunchFailed PunchOutcome = 2 // no confirmed path before the deadline
)

// String returns "up", "failed" or "outcome N".
func (o PunchOutcome) String() string {
	switch o {
	case PunchUp:
		return "up"
	case PunchFailed:
		return "failed"
	}
	return "outcome " + strconv.Itoa(int(o))
}

// Punch limits.
const (
	// MaxPunchTimeoutMS caps a punch's timeout: one minute.
	MaxPunchTimeoutMS = 60_000
	// PairSecretSize is the size of a pair key's secret.
	PairSecretSize = 32
)

// PunchRequest asks the hub for a punch to Peer:
//
//	request_id  u64  not 0: the requester's id for this punch, from the
//	                 same space as its REQUEST message ids (an ERROR with
//	                 this message id fails the punch)
//	transport   u8   1 udp, 2 tcp
//	timeout_ms  u32  1..MaxPunchTimeoutMS: how long the requester waits
//	peer        peer id: the other side, in the requester's network
type PunchRequest struct {
	RequestID uint64    `json:"request_id"`
	Transport Transport `json:"transport"`
	TimeoutMS uint32    `json:"timeout_ms"`
	Peer      PeerID    `json:"peer"`
}

// Kind implements [Message].
func (*PunchRequest) Kind() Kind { return KindPunchRequest }

// AppendTo implements [Message].
func (m *PunchRequest) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPunchRequest}
	if m.RequestID == 0 {
		c.fail("request_id", ProblemBadValue)
	}
	if !m.Transport.Valid() {
		c.fail("transport", ProblemBadValue)
	}
	if m.TimeoutMS == 0 || m.TimeoutMS > MaxPunchTimeoutMS {
		c.fail("timeout_ms", ProblemBadValue)
	}
	c.peerID("peer", m.Peer)
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPunchRequest, nil)
	b = appendU64(b, m.RequestID)
	b = append(b, byte(m.Transport))
	b = appendU32(b, m.TimeoutMS)
	return appendBytes8(b, m.Peer), nil
}

// Unmarshal implements [Message].
func (m *PunchRequest) Unmarshal(body []byte) error {
	*m = PunchRequest{}
	r, err := startBody(body, KindPunchRequest, nil)
	if err != nil {
		return err
	}
	if m.RequestID = r.u64("request_id"); r.err == nil && m.RequestID == 0 {
		r.fail("request_id", ProblemBadValue)
	}
	if m.Transport = Transport(r.u8("transport")); r.err == nil && !m.Transport.Valid() {
		r.fail("transport", ProblemBadValue)
	}
	if m.TimeoutMS = r.u32("timeout_ms"); r.err == nil && (m.TimeoutMS == 0 || m.TimeoutMS > MaxPunchTimeoutMS) {
		r.fail("timeout_ms", ProblemBadValue)
	}
	m.Peer = r.peerID("peer")
	if err := r.end(); err != nil {
		*m = PunchRequest{}
		return err
	}
	return nil
}

// PunchOffer is the hub's offer to each side of a punch, sent to both at
// once:
//
//	punch_id    u64  not 0: the hub's id of this punch, the same in both offers
//	request_id  u64  the requester's request id in the requester's offer; 0 in the other
//	transport   u8   1 udp, 2 tcp
//	timeout_ms  u32  1..MaxPunchTimeoutMS: time left until the punch's deadline
//	peer        peer id: the other side
//	key_id      u32  not 0: the pair key's id, the same for both sides
//	secret      32 bytes: the pair key's secret (a credential: never logged)
//	public      endpoint: the other side's public UDP endpoint as the hub observed it
//	count       u8   0..MaxCandidates
//	candidates  count × endpoint: the other side's registered local candidates
//
// The side with a request id is the initiator of the pair key's
// directions (docs/protocol/p2p.md §20.3).
type PunchOffer struct {
	PunchID    uint64               `json:"punch_id"`
	RequestID  uint64               `json:"request_id,omitempty"`
	Transport  Transport            `json:"transport"`
	TimeoutMS  uint32               `json:"timeout_ms"`
	Peer       PeerID               `json:"peer"`
	KeyID      uint32               `json:"key_id"`
	Secret     [PairSecretSize]byte `json:"secret"`
	Public     netip.AddrPort       `json:"public"`
	Candidates []netip.AddrPort     `json:"candidates,omitempty"`
}

// Initiator reports whether the recipient asked for this punch.
func (m *PunchOffer) Initiator() bool { return m.RequestID != 0 }

// Kind implements [Message].
func (*PunchOffer) Kind() Kind { return KindPunchOffer }

// AppendTo implements [Message].
func (m *PunchOffer) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPunchOffer}
	if m.PunchID == 0 {
		c.fail("punch_id", ProblemBadValue)
	}
	if !m.Transport.Valid() {
		c.fail("transport", ProblemBadValue)
	}
	if m.TimeoutMS == 0 || m.TimeoutMS > MaxPunchTimeoutMS {
		c.fail("timeout_ms", ProblemBadValue)
	}
	c.peerID("peer", m.Peer)
	if m.KeyID == 0 {
		c.fail("key_id", ProblemBadValue)
	}
	if !endpointOK(m.Public) {
		c.fail("public", ProblemBadEndpoint)
	}
	c.length("count", len(m.Candidates), 0, MaxCandidates)
	for _, ap := range m.Candidates {
		if !endpointOK(ap) {
			c.fail("candidate", ProblemBadEndpoint)
		}
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPunchOffer, nil)
	b = appendU64(b, m.PunchID)
	b = appendU64(b, m.RequestID)
	b = append(b, byte(m.Transport))
	b = appendU32(b, m.TimeoutMS)
	b = appendBytes8(b, m.Peer)
	b = appendU32(b, m.KeyID)
	b = append(b, m.Secret[:]...)
	b = appendEndpoint(b, m.Public)
	b = append(b, byte(len(m.Candidates)))
	for _, ap := range m.Candidates {
		b = appendEndpoint(b, ap)
	}
	return b, nil
}

// Unmarshal implements [Message].
func (m *PunchOffer) Unmarshal(body []byte) error {
	*m = PunchOffer{}
	r, err := startBody(body, KindPunchOffer, nil)
	if err != nil {
		return err
	}
	if m.PunchID = r.u64("punch_id"); r.err == nil && m.PunchID == 0 {
		r.fail("punch_id", ProblemBadValue)
	}
	m.RequestID = r.u64("request_id")
	if m.Transport = Transport(r.u8("transport")); r.err == nil && !m.Transport.Valid() {
		r.fail("transport", ProblemBadValue)
	}
	if m.TimeoutMS = r.u32("timeout_ms"); r.err == nil && (m.TimeoutMS == 0 || m.TimeoutMS > MaxPunchTimeoutMS) {
		r.fail("timeout_ms", ProblemBadValue)
	}
	m.Peer = r.peerID("peer")
	if m.KeyID = r.u32("key_id"); r.err == nil && m.KeyID == 0 {
		r.fail("key_id", ProblemBadValue)
	}
	if p := r.take(PairSecretSize, "secret"); p != nil {
		copy(m.Secret[:], p)
	}
	m.Public = r.endpoint("public")
	n := int(r.u8("count"))
	if r.err == nil && n > MaxCandidates {
		r.fail("count", ProblemOverCap)
	}
	if r.err == nil && n > 0 {
		m.Candidates = make([]netip.AddrPort, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		m.Candidates = append(m.Candidates, r.endpoint("candidate"))
	}
	if err := r.end(); err != nil {
		*m = PunchOffer{}
		return err
	}
	return nil
}

// PunchResult reports a punch's outcome to the hub, once per side:
//
//	punch_id  u64  not 0: from the offer
//	outcome   u8   1 up, 2 failed
type PunchResult struct {
	PunchID uint64       `json:"punch_id"`
	Outcome PunchOutcome `json:"outcome"`
}

// Kind implements [Message].
func (*PunchResult) Kind() Kind { return KindPunchResult }

// AppendTo implements [Message].
func (m *PunchResult) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPunchResult}
	if m.PunchID == 0 {
		c.fail("punch_id", ProblemBadValue)
	}
	if m.Outcome != PunchUp && m.Outcome != PunchFailed {
		c.fail("outcome", ProblemBadValue)
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPunchResult, nil)
	b = appendU64(b, m.PunchID)
	return append(b, byte(m.Outcome)), nil
}

// Unmarshal implements [Message].
func (m *PunchResult) Unmarshal(body []byte) error {
	*m = PunchResult{}
	r, err := startBody(body, KindPunchResult, nil)
	if err != nil {
		return err
	}
	if m.PunchID = r.u64("punch_id"); r.err == nil && m.PunchID == 0 {
		r.fail("punch_id", ProblemBadValue)
	}
	if m.Outcome = PunchOutcome(r.u8("outcome")); r.err == nil && m.Outcome != PunchUp && m.Outcome != PunchFailed {
		r.fail("outcome", ProblemBadValue)
	}
	if err := r.end(); err != nil {
		*m = PunchResult{}
		return err
	}
	return nil
}

// PunchProbe is sent by each side of a punch to every candidate of the
// other, sealed with the pair key; on a punched TCP connection it is the
// first frame each side sends:
//
//	punch_id  u64  not 0: from the offer
//	target    endpoint: the address the prober sent it to
type PunchProbe struct {
	PunchID uint64         `json:"punch_id"`
	Target  netip.AddrPort `json:"target"`
}

// PunchAck answers a PUNCH_PROBE, sealed with the pair key, sent to the
// probe's source:
//
//	punch_id  u64  not 0: the probe's
//	target    endpoint: the probe's target, echoed (which candidate reached the acker)
//	observed  endpoint: the probe's source as the acker saw it
type PunchAck struct {
	PunchID  uint64         `json:"punch_id"`
	Target   netip.AddrPort `json:"target"`
	Observed netip.AddrPort `json:"observed"`
}

// Kind implements [Message].
func (*PunchProbe) Kind() Kind { return KindPunchProbe }

// AppendTo implements [Message].
func (m *PunchProbe) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPunchProbe}
	if m.PunchID == 0 {
		c.fail("punch_id", ProblemBadValue)
	}
	if !endpointOK(m.Target) {
		c.fail("target", ProblemBadEndpoint)
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPunchProbe, nil)
	b = appendU64(b, m.PunchID)
	return appendEndpoint(b, m.Target), nil
}

// Unmarshal implements [Message].
func (m *PunchProbe) Unmarshal(body []byte) error {
	*m = PunchProbe{}
	r, err := startBody(body, KindPunchProbe, nil)
	if err != nil {
		return err
	}
	if m.PunchID = r.u64("punch_id"); r.err == nil && m.PunchID == 0 {
		r.fail("punch_id", ProblemBadValue)
	}
	m.Target = r.endpoint("target")
	if err := r.end(); err != nil {
		*m = PunchProbe{}
		return err
	}
	return nil
}

// Kind implements [Message].
func (*PunchAck) Kind() Kind { return KindPunchAck }

// AppendTo implements [Message].
func (m *PunchAck) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPunchAck}
	if m.PunchID == 0 {
		c.fail("punch_id", ProblemBadValue)
	}
	if !endpointOK(m.Target) {
		c.fail("target", ProblemBadEndpoint)
	}
	if !endpointOK(m.Observed) {
		c.fail("observed", ProblemBadEndpoint)
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPunchAck, nil)
	b = appendU64(b, m.PunchID)
	b = appendEndpoint(b, m.Target)
	return appendEndpoint(b, m.Observed), nil
}

// Unmarshal implements [Message].
func (m *PunchAck) Unmarshal(body []byte) error {
	*m = PunchAck{}
	r, err := startBody(body, KindPunchAck, nil)
	if err != nil {
		return err
	}
	if m.PunchID = r.u64("punch_id"); r.err == nil && m.PunchID == 0 {
		r.fail("punch_id", ProblemBadValue)
	}
	m.Target = r.endpoint("target")
	m.Observed = r.endpoint("observed")
	if err := r.end(); err != nil {
		*m = PunchAck{}
		return err
	}
	return nil
}
