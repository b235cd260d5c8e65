package p2pwire

// Control messages of the TLS link. Each body is the routing header (the
// kind, route_flags 0) and the fields listed on its type, in order.

// Hello is the first frame a peer sends after the TLS handshake:
//
//	version       u8    Version
//	hello_flags   u8    bit 0 ticket, bit 1 resume_token; at least one set, other bits 0
//	ticket        u16 length (1..MaxTicketLen) + bytes   if bit 0
//	resume_token  u8 length (1..MaxResumeTokenLen) + bytes   if bit 1
//
// The ticket is the sealed hub ticket the API handed out (it names the user,
// the network and the peer id); the resume token is the one a previous
// WELCOME gave, to come back with the same peer id within the resume
// window. With both, the hub tries the resume token first.
type Hello struct {
	Ticket      []byte `json:"ticket,omitempty"`
	ResumeToken []byte `json:"resume_token,omitempty"`
}

// Hello flag bits.
const (
	HelloTicket = 1 << 0
	HelloResume = 1 << 1
)

// Kind implements [Message].
func (*Hello) Kind() Kind { return KindHello }

// AppendTo implements [Message].
func (m *Hello) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindHello}
	var f uint8
	if len(m.Ticket) != 0 {
		f |= HelloTicket
		c.length("ticket", len(m.Ticket), 1, MaxTicketLen)
	}
	if len(m.ResumeToken) != 0 {
		f |= HelloResume
		c.length("resume_token", len(m.ResumeToken), 1, MaxResumeTokenLen)
	}
	if f == 0 {
		c.fail("hello_flags", ProblemMissing)
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindHello, nil)
	b = append(b, Version, f)
	if f&HelloTicket != 0 {
		b = appendBytes16(b, m.Ticket)
	}
	if f&HelloResume != 0 {
		b = appendBytes8(b, m.ResumeToken)
	}
	return b, nil
}

// Unmarshal implements [Message]. A version other than Version fails with an
// error that matches [ErrUnsupportedVersion].
func (m *Hello) Unmarshal(body []byte) error {
	*m = Hello{}
	r, err := startBody(body, KindHello, nil)
	if err != nil {
		return err
	}
	if v := r.u8("version"); r.err == nil && v != Version {
		r.fail("version", ProblemBadVersion)
	}
	f := r.flags("hello_flags", HelloTicket|HelloResume)
	if r.err == nil && f == 0 {
		r.fail("hello_flags", ProblemMissing)
	}
	if f&HelloTicket != 0 {
		m.Ticket = r.bytes16("ticket", 1, MaxTicketLen)
	}
	if f&HelloResume != 0 {
		m.ResumeToken = r.bytes8("resume_token", 1, MaxResumeTokenLen)
	}
	if err := r.end(); err != nil {
		*m = Hello{}
		return err
	}
	return nil
}

// Welcome is the hub's answer to a HELLO it accepts:
//
//	version           u8    Version
//	welcome_flags     u8    bit 0 resumed, bit 1 udp; other bits 0
//	peer_id           u8 length + peer id       the peer's own id
//	network           u8 length (1..MaxNetworkLen) + UTF-8
//	max_frame_size    u32   MinAnnouncedFrameSize..MaxFrameSize: the largest body the hub accepts
//	resume_window_ms  u32   how long the hub keeps the peer id after a disconnection
//	resume_token      u8 length (0..MaxResumeTokenLen) + bytes   0: resuming not offered
//	udp_key_id        u32   not 0                  if bit 1
//	udp_secret        UDPSecretSize bytes          if bit 1
//
// resumed says the connection continues an earlier one with the same peer
// id: the other peers saw no leave. The UDP fields are the peer's session
// with the hub's UDP port (the same port number as the TLS listener); the
// secret is key material: never log it.
type Welcome struct {
	Resumed        bool        `json:"resumed,omitempty"`
	PeerID         PeerID      `json:"peer_id"`
	Network        string      `json:"network"`
	MaxFrameSize   uint32      `json:"max_frame_size"`
	ResumeWindowMS uint32      `json:"resume_window_ms"`
	ResumeToken    []byte      `json:"resume_token,omitempty"`
	UDP            *UDPSession `json:"udp,omitempty"`
}

// UDPSession is a peer's UDP key with the hub, from WELCOME.
type UDPSession struct {
	KeyID  uint32              `json:"key_id"`
	Secret [UDPSecretSize]byte `json:"secret"`
}

// Welcome flag bits.
const (
	WelcomeResumed = 1 << 0
	WelcomeUDP     = 1 << 1
)

// Kind implements [Message].
func (*Welcome) Kind() Kind { return KindWelcome }

// AppendTo implements [Message].
func (m *Welcome) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindWelcome}
	c.peerID("peer_id", m.PeerID)
	c.str("network", m.Network, 1, MaxNetworkLen)
	if m.MaxFrameSize < MinAnnouncedFrameSize || m.MaxFrameSize > MaxFrameSize {
		c.fail("max_frame_size", ProblemBadValue)
	}
	c.length("resume_token", len(m.ResumeToken), 0, MaxResumeTokenLen)
	var f uint8
	if m.Resumed {
		f |= WelcomeResumed
	}
	if m.UDP != nil {
		f |= WelcomeUDP
		if m.UDP.KeyID == 0 {
			c.fail("udp_key_id", ProblemBadValue)
		}
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindWelcome, nil)
	b = append(b, Version, f)
	b = appendBytes8(b, m.PeerID)
	b = appendBytes8(b, m.Network)
	b = appendU32(b, m.MaxFrameSize)
	b = appendU32(b, m.ResumeWindowMS)
	b = appendBytes8(b, m.ResumeToken)
	if m.UDP != nil {
		b = appendU32(b, m.UDP.KeyID)
		b = append(b, m.UDP.Secret[:]...)
	}
	return b, nil
}

// Unmarshal implements [Message]. A version other than Version fails with an
// error that matches [ErrUnsupportedVersion].
func (m *Welcome) Unmarshal(body []byte) error {
	*m = Welcome{}
	r, err := startBody(body, KindWelcome, nil)
	if err != nil {
		return err
	}
	if v := r.u8("version"); r.err == nil && v != Version {
		r.fail("version", ProblemBadVersion)
	}
	f := r.flags("welcome_flags", WelcomeResumed|WelcomeUDP)
	m.Resumed = f&WelcomeResumed != 0
	m.PeerID = r.peerID("peer_id")
	m.Network = r.str8("network", 1, MaxNetworkLen)
	if m.MaxFrameSize = r.u32("max_frame_size"); r.err == nil &&
		(m.MaxFrameSize < MinAnnouncedFrameSize || m.MaxFrameSize > MaxFrameSize) {
		r.fail("max_frame_size", ProblemBadValue)
	}
	m.ResumeWindowMS = r.u32("resume_window_ms")
	if tok := r.bytes8("resume_token", 0, MaxResumeTokenLen); len(tok) > 0 {
		m.ResumeToken = tok
	}
	if f&WelcomeUDP != 0 {
		u := &UDPSession{KeyID: r.u32("udp_key_id")}
		if r.err == nil && u.KeyID == 0 {
			r.fail("udp_key_id", ProblemBadValue)
		}
		copy(u.Secret[:], r.take(UDPSecretSize, "udp_secret"))
		m.UDP = u
	}
	if err := r.end(); err != nil {
		*m = Welcome{}
		return err
	}
	return nil
}

// PeerSet is the full set of the other peers of the network, sent after
// WELCOME and whenever the hub cannot send events (a peer that fell behind):
//
//	version  u64   the set's version; PEER_EVENTS continue from it
//	count    u16   0..MaxPeersInSet
//	peers    count × (u8 length + peer id), strictly ascending bytewise
//
// The recipient is not in the set. A set replaces whatever the recipient
// knew; events whose version is not above the set's are stale.
type PeerSet struct {
	Version uint64   `json:"version"`
	Peers   []PeerID `json:"peers"`
}

// Kind implements [Message].
func (*PeerSet) Kind() Kind { return KindPeerSet }

// AppendTo implements [Message].
func (m *PeerSet) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPeerSet}
	if len(m.Peers) > MaxPeersInSet {
		c.fail("count", ProblemOverCap)
	}
	for i, p := range m.Peers {
		c.peerID("peer_id", p)
		if i > 0 && p <= m.Peers[i-1] {
			c.fail("peer_id", ProblemNotAscend)
		}
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPeerSet, nil)
	b = appendU64(b, m.Version)
	b = appendU16(b, uint16(len(m.Peers)))
	for _, p := range m.Peers {
		b = appendBytes8(b, p)
	}
	return b, nil
}

// Unmarshal implements [Message].
func (m *PeerSet) Unmarshal(body []byte) error {
	*m = PeerSet{}
	r, err := startBody(body, KindPeerSet, nil)
	if err != nil {
		return err
	}
	m.Version = r.u64("version")
	n := int(r.u16("count"))
	if r.err == nil && n > MaxPeersInSet {
		r.fail("count", ProblemOverCap)
	}
	if r.err == nil {
		m.Peers = make([]PeerID, 0, min(n, (len(r.b)-r.off)/2))
	}
	for i := 0; i < n && r.err == nil; i++ {
		p := r.peerID("peer_id")
		if i > 0 && r.err == nil && p <= m.Peers[i-1] {
			r.fail("peer_id", ProblemNotAscend)
		}
		m.Peers = append(m.Peers, p)
	}
	if err := r.end(); err != nil {
		*m = PeerSet{}
		return err
	}
	return nil
}

// PeerEvents are the changes to the peer set since the last PEER_SET or
// PEER_EVENTS, coalesced: the hub sends at most one event per peer (a peer
// that joined and left in between is not mentioned; one that left and came
// back with the same id neither):
//
//	version  u64   the set's version after these events; above the previous one
//	count    u16   1..MaxPeersInSet
//	events   count × (op u8, u8 length + peer id), strictly ascending by peer id
//
// op is 1 joined, 2 left.
type PeerEvents struct {
	Version uint64      `json:"version"`
	Events  []PeerEvent `json:"events"`
}

// PeerEvent is one change in PEER_EVENTS.
type PeerEvent struct {
	Op   EventOp `json:"op"`
	Peer PeerID  `json:"peer"`
}

// Kind implements [Message].
func (*PeerEvents) Kind() Kind { return KindPeerEvents }

// AppendTo implements [Message].
func (m *PeerEvents) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindPeerEvents}
	c.length("count", len(m.Events), 1, MaxPeersInSet)
	for i, e := range m.Events {
		if e.Op != PeerJoined && e.Op != PeerLeft {
			c.fail("op", ProblemBadValue)
		}
		c.peerID("peer_id", e.Peer)
		if i > 0 && e.Peer <= m.Events[i-1].Peer {
			c.fail("peer_id", ProblemNotAscend)
		}
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindPeerEvents, nil)
	b = appendU64(b, m.Version)
	b = appendU16(b, uint16(len(m.Events)))
	for _, e := range m.Events {
		b = append(b, byte(e.Op))
		b = appendBytes8(b, e.Peer)
	}
	return b, nil
}

// Unmarshal implements [Message].
func (m *PeerEvents) Unmarshal(body []byte) error {
	*m = PeerEvents{}
	r, err := startBody(body, KindPeerEvents, nil)
	if err != nil {
		return err
	}
	m.Version = r.u64("version")
	n := int(r.u16("count"))
	switch {
	case r.err != nil:
	case n == 0:
		r.fail("count", ProblemEmpty)
	case n > MaxPeersInSet:
		r.fail("count", ProblemOverCap)
	default:
		m.Events = make([]PeerEvent, 0, min(n, (len(r.b)-r.off)/3))
	}
	for i := 0; i < n && r.err == nil; i++ {
		op := EventOp(r.u8("op"))
		if r.err == nil && op != PeerJoined && op != PeerLeft {
			r.fail("op", ProblemBadValue)
		}
		p := r.peerID("peer_id")
		if i > 0 && r.err == nil && p <= m.Events[i-1].Peer {
			r.fail("peer_id", ProblemNotAscend)
		}
		m.Events = append(m.Events, PeerEvent{Op: op, Peer: p})
	}
	if err := r.end(); err != nil {
		*m = PeerEvents{}
		return err
	}
	return nil
}

// Error is an ERROR from the hub:
//
//	code         u16   an [ErrorCode], not 0
//	error_flags  u8    bit 0 message_id, bit 1 peer, bit 2 closing; other bits 0
//	message_id   u64   not 0; the message the error is about       if bit 0
//	peer         u8 length + peer id; the destination it is about  if bit 1
//	reason       u16 length (0..MaxReasonLen) + UTF-8, for people; never holds a token or a payload
//
// closing says the hub closes the connection after this frame. An error
// about a REQUEST carries its message id, so the requester fails that
// request at once instead of waiting for its timeout.
type Error struct {
	Code      ErrorCode `json:"code"`
	MessageID uint64    `json:"message_id,omitempty"`
	Peer      PeerID    `json:"peer,omitempty"`
	Closing   bool      `json:"closing,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// Error flag bits.
const (
	ErrorMessageID = 1 << 0
	ErrorPeer      = 1 << 1
	ErrorClosing   = 1 << 2
)

// Kind implements [Message].
func (*Error) Kind() Kind { return KindError }

// AppendTo implements [Message].
func (m *Error) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindError}
	if m.Code == 0 {
		c.fail("code", ProblemBadValue)
	}
	var f uint8
	if m.MessageID != 0 {
		f |= ErrorMessageID
	}
	if m.Peer != "" {
		f |= ErrorPeer
		c.peerID("peer", m.Peer)
	}
	if m.Closing {
		f |= ErrorClosing
	}
	c.str("reason", m.Reason, 0, MaxReasonLen)
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindError, nil)
	b = appendU16(b, uint16(m.Code))
	b = append(b, f)
	if f&ErrorMessageID != 0 {
		b = appendU64(b, m.MessageID)
	}
	if f&ErrorPeer != 0 {
		b = appendBytes8(b, m.Peer)
	}
	return appendBytes16(b, m.Reason), nil
}

// Unmarshal implements [Message]. It accepts every non-zero code.
func (m *Error) Unmarshal(body []byte) error {
	*m = Error{}
	r, err := startBody(body, KindError, nil)
	if err != nil {
		return err
	}
	if m.Code = ErrorCode(r.u16("code")); r.err == nil && m.Code == 0 {
		r.fail("code", ProblemBadValue)
	}
	f := r.flags("error_flags", ErrorMessageID|ErrorPeer|ErrorClosing)
	if f&ErrorMessageID != 0 {
		if m.MessageID = r.u64("message_id"); r.err == nil && m.MessageID == 0 {
			r.fail("message_id", ProblemBadValue)
		}
	}
	if f&ErrorPeer != 0 {
		m.Peer = r.peerID("peer")
	}
	m.Closing = f&ErrorClosing != 0
	m.Reason = r.str16("reason", 0, MaxReasonLen)
	if err := r.end(); err != nil {
		*m = Error{}
		return err
	}
	return nil
}

// Ping asks the other end of the link (the hub, or a peer on a direct path)
// for a PONG with the same value: value u64. Either side may send it, on
// the TLS link or in a datagram; it keeps NAT mappings and direct paths
// alive and measures round trips.
type Ping struct {
	Value uint64 `json:"value"`
}

// Pong answers a PING: value u64, the PING's.
type Pong struct {
	Value uint64 `json:"value"`
}

// Kind implements [Message].
func (*Ping) Kind() Kind { return KindPing }

// AppendTo implements [Message]. It never fails.
func (m *Ping) AppendTo(b []byte) ([]byte, error) {
	b, _ = appendRouting(b, KindPing, nil)
	return appendU64(b, m.Value), nil
}

// Unmarshal implements [Message].
func (m *Ping) Unmarshal(body []byte) error { return unmarshalU64(body, KindPing, &m.Value) }

// Kind implements [Message].
func (*Pong) Kind() Kind { return KindPong }

// AppendTo implements [Message]. It never fails.
func (m *Pong) AppendTo(b []byte) ([]byte, error) {
	b, _ = appendRouting(b, KindPong, nil)
	return appendU64(b, m.Value), nil
}

// Unmarshal implements [Message].
func (m *Pong) Unmarshal(body []byte) error { return unmarshalU64(body, KindPong, &m.Value) }

func unmarshalU64(body []byte, k Kind, v *uint64) error {
	*v = 0
	r, err := startBody(body, k, nil)
	if err != nil {
		return err
	}
	x := r.u64("value")
	if err := r.end(); err != nil {
		return err
	}
	*v = x
	return nil
}

// Goodbye tells the hub the peer leaves for good: the hub drops its peer id
// at once instead of keeping it for the resume window. It has no fields.
type Goodbye struct{}

// Kind implements [Message].
func (*Goodbye) Kind() Kind { return KindGoodbye }

// AppendTo implements [Message]. It never fails.
func (*Goodbye) AppendTo(b []byte) ([]byte, error) { return appendRouting(b, KindGoodbye, nil) }

// Unmarshal implements [Message].
func (*Goodbye) Unmarshal(body []byte) error {
	r, err := startBody(body, KindGoodbye, nil)
	if err != nil {
		return err
	}
	return r.end()
}
