package p2pwire

import (
	"encoding/binary"
	"net/netip"
)

// A datagram on the hub's UDP port (or between punched peers) is either a
// STUN message (first byte 0x00–0x3F, RFC 5389, [IsSTUN]; not this package's) or a
// sealed datagram:
//
//	marker   u8    SealedMarker (0xE1)
//	key_id   u32   not 0: which key sealed it, as the hub assigned it
//	seq      u64   the sender's sequence number under that key
//	sealed   AEAD ciphertext of the plaintext, then a TagSize-byte tag
//
// The first SealedHeaderSize bytes are cleartext and are the AEAD's
// additional data; the nonce is key_id and seq, big-endian ([SealedHeader.Nonce]).
// A whole datagram is at most MaxDatagramSize bytes, so no datagram is ever
// fragmented by IP (IPv6 minimum MTU 1280, less 48 bytes of IPv6 and UDP
// headers). The plaintext is a routing header and a datagram kind's fields,
// at most MaxOpenedSize bytes. Sealing, key derivation and the replay window
// are internal/sealed's (docs/protocol/p2p.md says what they are).
const (
	SealedMarker     = 0xE1
	SealedHeaderSize = 13
	TagSize          = 16
	MaxDatagramSize  = 1232
	MaxOpenedSize    = MaxDatagramSize - SealedHeaderSize - TagSize // 1203
	// MaxRoutedRest is the most a routed datagram kind may carry after its
	// routing header: MaxOpenedSize less the largest routing header a hub
	// delivers (kind, flags, a MaxPeerIDLen from), so that stamping never
	// makes a datagram too large to re-seal, whatever the sender's routing.
	MaxRoutedRest = MaxOpenedSize - 3 - MaxPeerIDLen // 1104

	// MaxJumboSize is the largest jumbo message: 16,256,000 bytes, in
	// 15,875 chunks of JumboChunkSize.
	MaxJumboSize = 16_256_000
	// JumboChunkSize is the size of every jumbo chunk but the last. A
	// fragment's 12 fixed bytes and its chunk fit MaxRoutedRest.
	JumboChunkSize = 1024
	// MaxJumboChunks is the largest jumbo count.
	MaxJumboChunks = MaxJumboSize / JumboChunkSize
)

// SealedHeader is the cleartext prefix of a sealed datagram.
type SealedHeader struct {
	KeyID uint32
	Seq   uint64
}

// Nonce returns the 12-byte AEAD nonce of the datagram: key_id then seq,
// big-endian. A sender never reuses a seq under one key.
func (h SealedHeader) Nonce() (n [12]byte) {
	binary.BigEndian.PutUint32(n[:4], h.KeyID)
	binary.BigEndian.PutUint64(n[4:], h.Seq)
	return n
}

// AppendSealedHeader appends the cleartext prefix. It fails for key id 0.
func AppendSealedHeader(b []byte, h SealedHeader) ([]byte, error) {
	if h.KeyID == 0 {
		return b, errKeyIDZero
	}
	b = append(b, SealedMarker)
	b = appendU32(b, h.KeyID)
	return appendU64(b, h.Seq), nil
}

// ParseSealed splits a sealed datagram into its cleartext prefix, the
// additional data (d's first SealedHeaderSize bytes) and the sealed part
// (ciphertext and tag), all aliasing d. It checks the size, the marker, a
// non-zero key id and that the sealed part holds at least a tag; it
// allocates nothing.
func ParseSealed(d []byte) (h SealedHeader, ad, sealed []byte, err error) {
	switch {
	case len(d) > MaxDatagramSize:
		return h, nil, nil, errDatagramLarge
	case len(d) < 1:
		return h, nil, nil, errMarkerTruncated
	case d[0] != SealedMarker:
		return h, nil, nil, errMarkerBad
	case len(d) < 5:
		return h, nil, nil, errKeyIDTruncated
	case len(d) < SealedHeaderSize:
		if binary.BigEndian.Uint32(d[1:5]) == 0 {
			return h, nil, nil, errKeyIDZero
		}
		return h, nil, nil, errSeqTruncated
	}
	h.KeyID = binary.BigEndian.Uint32(d[1:5])
	if h.KeyID == 0 {
		return SealedHeader{}, nil, nil, errKeyIDZero
	}
	h.Seq = binary.BigEndian.Uint64(d[5:SealedHeaderSize])
	if len(d) < SealedHeaderSize+TagSize {
		return SealedHeader{}, nil, nil, errSealedShort
	}
	return h, d[:SealedHeaderSize:SealedHeaderSize], d[SealedHeaderSize:], nil
}

// IsSTUN reports whether d looks like a STUN message (RFC 5389: the two top
// bits of the first byte 0 and the magic cookie at bytes 4–7), the other
// thing the hub's UDP port answers.
func IsSTUN(d []byte) bool {
	return len(d) >= 20 && d[0]&0xC0 == 0 && binary.BigEndian.Uint32(d[4:8]) == 0x2112A442
}

// An endpoint on the wire:
//
//	family  u8    4 or 6
//	addr    4 or 16 bytes; a v6 address is never v4-mapped
//	port    u16   not 0

func appendEndpoint(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr()
	if a.Is4() {
		b = append(b, 4)
		a4 := a.As4()
		b = append(b, a4[:]...)
	} else {
		b = append(b, 6)
		a16 := a.As16()
		b = append(b, a16[:]...)
	}
	return appendU16(b, ap.Port())
}

func endpointOK(ap netip.AddrPort) bool {
	a := ap.Addr()
	return a.IsValid() && !a.Is4In6() && a.Zone() == "" && ap.Port() != 0
}

func (r *reader) endpoint(field string) netip.AddrPort {
	var a netip.Addr
	switch fam := r.u8(field); {
	case r.err != nil:
		return netip.AddrPort{}
	case fam == 4:
		if p := r.take(4, field); p != nil {
			a = netip.AddrFrom4([4]byte(p))
		}
	case fam == 6:
		if p := r.take(16, field); p != nil {
			a = netip.AddrFrom16([16]byte(p))
		}
	default:
		r.fail(field, ProblemBadEndpoint)
		return netip.AddrPort{}
	}
	port := r.u16(field)
	if r.err != nil {
		return netip.AddrPort{}
	}
	ap := netip.AddrPortFrom(a, port)
	if !endpointOK(ap) {
		r.fail(field, ProblemBadEndpoint)
		return netip.AddrPort{}
	}
	return ap
}

// Register is sent by a peer to the hub's UDP port, sealed with its hub key
// from WELCOME; the hub records the datagram's source as the peer's public
// endpoint and answers REGISTERED. A peer sends it after WELCOME, again
// until it has an answer, and whenever its local addresses change; the hub
// also re-records the endpoint when a peer's datagrams come from a new one
// (NAT rebinding):
//
//	count       u8   0..MaxCandidates
//	candidates  count × endpoint: the peer's local addresses and UDP port, hole-punch candidates
type Register struct {
	Candidates []netip.AddrPort `json:"candidates"`
}

// Kind implements [Message].
func (*Register) Kind() Kind { return KindRegister }

// AppendTo implements [Message].
func (m *Register) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindRegister}
	c.length("count", len(m.Candidates), 0, MaxCandidates)
	for _, ap := range m.Candidates {
		if !endpointOK(ap) {
			c.fail("candidate", ProblemBadEndpoint)
		}
	}
	if c.err != nil {
		return b, c.err
	}
	b, _ = appendRouting(b, KindRegister, nil)
	b = append(b, byte(len(m.Candidates)))
	for _, ap := range m.Candidates {
		b = appendEndpoint(b, ap)
	}
	return b, nil
}

// Unmarshal implements [Message].
func (m *Register) Unmarshal(body []byte) error {
	*m = Register{}
	r, err := startBody(body, KindRegister, nil)
	if err != nil {
		return err
	}
	n := int(r.u8("count"))
	if r.err == nil && n > MaxCandidates {
		r.fail("count", ProblemOverCap)
	}
	if r.err == nil {
		m.Candidates = make([]netip.AddrPort, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		m.Candidates = append(m.Candidates, r.endpoint("candidate"))
	}
	if err := r.end(); err != nil {
		*m = Register{}
		return err
	}
	return nil
}

// Registered is the hub's answer to REGISTER, sealed with the peer's key:
//
//	observed  endpoint: the source address and port of the REGISTER
type Registered struct {
	Observed netip.AddrPort `json:"observed"`
}

// Kind implements [Message].
func (*Registered) Kind() Kind { return KindRegistered }

// AppendTo implements [Message].
func (m *Registered) AppendTo(b []byte) ([]byte, error) {
	if !endpointOK(m.Observed) {
		return b, fieldErr(KindRegistered, "observed", ProblemBadEndpoint)
	}
	b, _ = appendRouting(b, KindRegistered, nil)
	return appendEndpoint(b, m.Observed), nil
}

// Unmarshal implements [Message].
func (m *Registered) Unmarshal(body []byte) error {
	*m = Registered{}
	r, err := startBody(body, KindRegistered, nil)
	if err != nil {
		return err
	}
	ap := r.endpoint("observed")
	if err := r.end(); err != nil {
		return err
	}
	m.Observed = ap
	return nil
}

// Reliable carries reliable-channel traffic between two peers, through the
// hub or direct (never broadcast):
//
//	channel  u8   1 Ch1, 2 Ch2, 3 Realtime
//	segment  the rest, at least 1 byte: KCP segments of that channel's conversation
//
// Each (pair of peers, channel) is one KCP conversation whose conv field is
// the channel number in its low byte and the conversation's incarnation
// above it (docs/protocol/p2p.md §13); each KCP message is one [Envelope].
type Reliable struct {
	Route
	Channel Channel `json:"channel"`
	Segment []byte  `json:"segment"`
}

// Kind implements [Message].
func (*Reliable) Kind() Kind { return KindReliable }

// AppendTo implements [Message].
func (m *Reliable) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindReliable}
	if !m.Channel.Valid() {
		c.fail("channel", ProblemBadValue)
	}
	if len(m.Segment) == 0 {
		c.fail("segment", ProblemEmpty)
	}
	if c.err != nil {
		return b, c.err
	}
	if 1+len(m.Segment) > MaxRoutedRest {
		return b, fieldErr(KindReliable, "datagram", ProblemTooLarge)
	}
	b, err := appendRouting(b, KindReliable, &m.Route)
	if err != nil {
		return b, err
	}
	b = append(b, byte(m.Channel))
	return append(b, m.Segment...), nil
}

// Unmarshal implements [Message].
func (m *Reliable) Unmarshal(body []byte) error {
	*m = Reliable{}
	r, err := startBody(body, KindReliable, &m.Route)
	if err != nil {
		m.Route = Route{}
		return err
	}
	if m.Channel = Channel(r.u8("channel")); r.err == nil && !m.Channel.Valid() {
		r.fail("channel", ProblemBadValue)
	}
	if m.Segment = r.rest(); r.err == nil && len(m.Segment) == 0 {
		r.fail("segment", ProblemEmpty)
	}
	if err := r.end(); err != nil {
		*m = Reliable{}
		return err
	}
	return nil
}

// Jumbo is one fragment of a jumbo message: an [Envelope] too large for
// one datagram, up to MaxJumboSize bytes, sent unreliably in MTU-safe
// chunks. The receiver reassembles the chunks of (sender, message_id) and
// drops the message if they do not all arrive in time; nothing is
// retransmitted:
//
//	message_id  u32   not 0; the sender's, unique among its jumbo messages in flight
//	index       u16   0..count-1
//	count       u16   1..MaxJumboChunks; = ceil(total / JumboChunkSize)
//	total       u32   1..MaxJumboSize: the size of the whole envelope
//	chunk       the rest: JumboChunkSize bytes, but for the last index
//	            total - (count-1) × JumboChunkSize
//
// Chunk i is bytes [i × JumboChunkSize, …) of the encoded envelope.
type Jumbo struct {
	Route
	MessageID uint32 `json:"message_id"`
	Index     uint16 `json:"index"`
	Count     uint16 `json:"count"`
	Total     uint32 `json:"total"`
	Chunk     []byte `json:"chunk"`
}

// JumboCount returns the number of chunks of a total-byte jumbo message, or
// 0 when total is not in 1..MaxJumboSize.
func JumboCount(total int) int {
	if total < 1 || total > MaxJumboSize {
		return 0
	}
	return (total + JumboChunkSize - 1) / JumboChunkSize
}

// JumboChunk returns chunk index of msg, aliasing msg; nil when index is
// out of range or msg is not a valid jumbo size.
func JumboChunk(msg []byte, index int) []byte {
	n := JumboCount(len(msg))
	if index < 0 || index >= n {
		return nil
	}
	start := index * JumboChunkSize
	end := min(start+JumboChunkSize, len(msg))
	return msg[start:end:end]
}

// check validates the fragment's numbers: the problems a decoder reports.
func (m *Jumbo) check(fail func(field, problem string)) {
	switch {
	case m.MessageID == 0:
		fail("message_id", ProblemBadValue)
	case m.Count == 0 || int(m.Count) > MaxJumboChunks:
		fail("count", ProblemBadValue)
	case m.Index >= m.Count:
		fail("index", ProblemBadValue)
	case m.Total == 0 || m.Total > MaxJumboSize:
		fail("total", ProblemBadValue)
	case JumboCount(int(m.Total)) != int(m.Count):
		fail("count", ProblemBadSize)
	case len(m.Chunk) != jumboChunkLen(m.Total, m.Index, m.Count):
		fail("chunk", ProblemBadSize)
	}
}

func jumboChunkLen(total uint32, index, count uint16) int {
	if index+1 < count {
		return JumboChunkSize
	}
	return int(total) - int(count-1)*JumboChunkSize
}

// Kind implements [Message].
func (*Jumbo) Kind() Kind { return KindJumbo }

// AppendTo implements [Message].
func (m *Jumbo) AppendTo(b []byte) ([]byte, error) {
	c := checker{k: KindJumbo}
	m.check(c.fail)
	if c.err != nil {
		return b, c.err
	}
	b, err := appendRouting(b, KindJumbo, &m.Route)
	if err != nil {
		return b, err
	}
	b = appendU32(b, m.MessageID)
	b = appendU16(b, m.Index)
	b = appendU16(b, m.Count)
	b = appendU32(b, m.Total)
	return append(b, m.Chunk...), nil
}

// Unmarshal implements [Message].
func (m *Jumbo) Unmarshal(body []byte) error {
	*m = Jumbo{}
	r, err := startBody(body, KindJumbo, &m.Route)
	if err != nil {
		m.Route = Route{}
		return err
	}
	m.MessageID = r.u32("message_id")
	m.Index = r.u16("index")
	m.Count = r.u16("count")
	m.Total = r.u32("total")
	m.Chunk = r.rest()
	if r.err == nil {
		m.check(r.fail)
	}
	if err := r.end(); err != nil {
		*m = Jumbo{}
		return err
	}
	return nil
}
