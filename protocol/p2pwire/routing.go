package p2pwire

// The routing header starts every frame body and every opened datagram:
//
//	kind         u8
//	route_flags  u8    bit 0 to, bit 1 from, bit 2 broadcast; other bits 0
//	to           u8 length (1..MaxPeerIDLen) + peer id   if bit 0
//	from         u8 length (1..MaxPeerIDLen) + peer id   if bit 1
//
// Control kinds have route_flags 0. A routed kind has one of:
//
//	to                a peer sends to one peer through the hub
//	broadcast         a peer sends to every other peer of its network (MESSAGE, UDP_MESSAGE, JUMBO)
//	from              the hub delivers what that peer sent to one peer
//	from + broadcast  the hub delivers what that peer broadcast
//	none              direct path: the sender is the other end of the punched link
//
// The hub refuses (ERROR forbidden) a routed frame that sets from (a peer
// cannot speak as another) or has none (there is no direct path through the
// hub), and the kinds only a hub sends: [Routing.FromPeer]. To deliver, it replaces the routing header with one that has from
// set to the sender's id, keeps the broadcast bit, drops to, and copies the
// rest of the body unchanged; it never decodes past the routing header.

// Route flag bits.
const (
	FlagTo        = 1 << 0
	FlagFrom      = 1 << 1
	FlagBroadcast = 1 << 2
)

// Routing is a decoded routing header. To and From alias the decoded bytes.
type Routing struct {
	Kind  Kind
	Flags uint8  // route_flags
	To    []byte // destination peer id, when Flags has FlagTo
	From  []byte // source peer id, when Flags has FlagFrom
	Size  int    // bytes of the routing header: the kind's fields start at body[Size:]
}

// Broadcast reports whether the broadcast flag is set.
func (r *Routing) Broadcast() bool { return r.Flags&FlagBroadcast != 0 }

// FromPeer reports whether r is as a peer sends it to the hub: a routed
// kind with to or broadcast, or a control kind that peers send. A hub
// refuses frames and datagrams for which it is false (ERROR forbidden). It
// does not check the carrier ([Kind.OnStream], [Kind.OnDatagram]).
func (r *Routing) FromPeer() bool {
	if !r.Kind.Routed() {
		return !r.Kind.FromHubOnly()
	}
	return r.Flags == FlagTo || r.Flags == FlagBroadcast
}

// Direct reports whether r is a routed kind on a direct path (no routing
// fields).
func (r *Routing) Direct() bool { return r.Kind.Routed() && r.Flags == 0 }

// routeFlagsOK reports whether flags is a combination kind k allows.
func routeFlagsOK(k Kind, flags uint8) bool {
	c := kindClass[k]
	if c&classRouted == 0 {
		return flags == 0
	}
	switch flags {
	case 0, FlagTo, FlagFrom:
		return true
	case FlagBroadcast, FlagFrom | FlagBroadcast:
		return c&classBroadcast != 0
	}
	return false
}

// DecodeRouting decodes the routing header at the start of body (a frame
// body or an opened datagram) and does not look past it. It fails with
// [ErrUnknownKind] for a kind this version does not define and with a
// shared [*FieldError] (Kind KindNone) for a malformed header. It allocates
// nothing.
func DecodeRouting(body []byte) (Routing, error) {
	var r Routing
	if len(body) < 1 {
		return r, errKindTruncated
	}
	r.Kind = Kind(body[0])
	if !r.Kind.Known() {
		return r, ErrUnknownKind
	}
	if len(body) < 2 {
		return r, errFlagsTruncated
	}
	r.Flags = body[1]
	if !routeFlagsOK(r.Kind, r.Flags) {
		return r, errFlagsBad
	}
	off := 2
	var err error
	if r.Flags&FlagTo != 0 {
		if r.To, off, err = routePeer(body, off, errToTruncated, errToEmpty, errToOverCap, errToBad); err != nil {
			return r, err
		}
	}
	if r.Flags&FlagFrom != 0 {
		if r.From, off, err = routePeer(body, off, errFromTruncated, errFromEmpty, errFromOverCap, errFromBad); err != nil {
			return r, err
		}
	}
	r.Size = off
	return r, nil
}

func routePeer(body []byte, off int, truncated, empty, overCap, bad error) ([]byte, int, error) {
	if off >= len(body) {
		return nil, off, truncated
	}
	n := int(body[off])
	off++
	switch {
	case n == 0:
		return nil, off, empty
	case n > MaxPeerIDLen:
		return nil, off, overCap
	case n > len(body)-off:
		return nil, off, truncated
	}
	p := body[off : off+n : off+n]
	if !peerIDBytesOK(p) {
		return nil, off, bad
	}
	return p, off + n, nil
}

// AppendStampedRouting appends the routing header the hub delivers for a
// routed message decoded as r: from set to from, the broadcast bit kept, no
// to. Following it with body[r.Size:] gives the delivered body (a frame body
// or the plaintext of the datagram the hub re-seals for the recipient).
func AppendStampedRouting(b []byte, r *Routing, from []byte) ([]byte, error) {
	if !r.Kind.Routed() {
		return b, errFlagsBad
	}
	switch {
	case len(from) == 0:
		return b, errFromEmpty
	case len(from) > MaxPeerIDLen:
		return b, errFromOverCap
	case !peerIDBytesOK(from):
		return b, errFromBad
	}
	b = append(b, byte(r.Kind), FlagFrom|r.Flags&FlagBroadcast, byte(len(from)))
	return append(b, from...), nil
}

// StampedSize is the size of the body the hub delivers for a body of bodyLen
// bytes decoded as r, stamped with a from of fromLen bytes.
func StampedSize(r *Routing, fromLen, bodyLen int) int {
	return 3 + fromLen + bodyLen - r.Size
}

// AppendStampedFrameHeader appends the length prefix and the stamped routing
// header of the frame the hub delivers for body (decoded as r); the hub then
// writes body[r.Size:] after it, from the buffer it read it into.
func AppendStampedFrameHeader(b []byte, r *Routing, from []byte, bodyLen int) ([]byte, error) {
	start := len(b)
	b, err := AppendFrameHeader(b, StampedSize(r, len(from), bodyLen))
	if err != nil {
		return b, err
	}
	if b, err = AppendStampedRouting(b, r, from); err != nil {
		return b[:start], err
	}
	return b, nil
}

// Route is the routing of a routed message, in the Go types that messages
// decode into. Its zero value is a direct-path message.
type Route struct {
	To        PeerID `json:"to,omitempty"`
	From      PeerID `json:"from,omitempty"`
	Broadcast bool   `json:"broadcast,omitempty"`
}

func (rt *Route) flags() uint8 {
	var f uint8
	if rt.To != "" {
		f |= FlagTo
	}
	if rt.From != "" {
		f |= FlagFrom
	}
	if rt.Broadcast {
		f |= FlagBroadcast
	}
	return f
}

// appendRouting appends the routing header of kind k with route rt (nil for
// a control kind), refusing what DecodeRouting refuses.
func appendRouting(b []byte, k Kind, rt *Route) ([]byte, error) {
	if rt == nil {
		return append(b, byte(k), 0), nil
	}
	c := checker{k: KindNone}
	f := rt.flags()
	if !routeFlagsOK(k, f) {
		c.fail("route_flags", ProblemBadFlags)
	}
	if f&FlagTo != 0 {
		c.peerID("to", rt.To)
	}
	if f&FlagFrom != 0 {
		c.peerID("from", rt.From)
	}
	if c.err != nil {
		return b, c.err
	}
	b = append(b, byte(k), f)
	if f&FlagTo != 0 {
		b = appendBytes8(b, rt.To)
	}
	if f&FlagFrom != 0 {
		b = appendBytes8(b, rt.From)
	}
	return b, nil
}

// startBody checks that body is of kind k, decodes its routing header into
// rt (nil for a control kind) and returns a reader positioned after it.
func startBody(body []byte, k Kind, rt *Route) (reader, error) {
	if len(body) >= 1 && Kind(body[0]) != k {
		return reader{}, fieldErr(k, "kind", ProblemWrongKind)
	}
	h, err := DecodeRouting(body)
	if err != nil {
		return reader{}, err
	}
	if h.Kind != k {
		return reader{}, fieldErr(k, "kind", ProblemWrongKind)
	}
	if k.OnDatagram() && !k.OnStream() &&
		(len(body) > MaxOpenedSize || k.Routed() && len(body)-h.Size > MaxRoutedRest) {
		return reader{}, fieldErr(k, "datagram", ProblemTooLarge)
	}
	if rt != nil {
		*rt = Route{To: PeerID(h.To), From: PeerID(h.From), Broadcast: h.Broadcast()}
	}
	return reader{b: body, off: h.Size, k: k}, nil
}
