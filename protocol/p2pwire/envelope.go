package p2pwire

import (
	"encoding/binary"
	"strings"
)

// The envelope follows the routing header of MESSAGE, REQUEST, RESPONSE and
// UDP_MESSAGE; it is also what a jumbo message reassembles to and what one
// reliable-channel message carries:
//
//	env_flags   u8    bit 0 message_id, bit 1 header, bit 2 pairs; other bits 0
//	message_id  u64   if bit 0; not 0
//	header      u16 length (1..MaxHeaderLen) + UTF-8   if bit 1
//	pairs       u8 count (1..MaxPairs), then per pair:   if bit 2
//	              key    u8 length (1..MaxKeyLen) + UTF-8
//	              value  u16 length (0..MaxValueLen) + UTF-8
//	            keys strictly ascending (bytewise), hence unique
//	payload     the rest of the body, opaque, possibly empty
//
// A field is present exactly when its value is not the zero value, so every
// envelope has one encoding.

// Envelope flag bits.
const (
	EnvMessageID = 1 << 0
	EnvHeader    = 1 << 1
	EnvPairs     = 1 << 2
	envFlagBits  = EnvMessageID | EnvHeader | EnvPairs
)

// Envelope is what peers send each other; the hub never decodes it.
type Envelope struct {
	MessageID uint64 `json:"message_id,omitempty"` // 0: absent; correlates a RESPONSE with its REQUEST
	Header    string `json:"header,omitempty"`     // "": absent; a short application label
	Pairs     []Pair `json:"pairs,omitempty"`      // empty: absent; keys strictly ascending
	Payload   []byte `json:"payload,omitempty"`    // opaque; aliases the input when decoded
}

// Pair is one key/value pair of an envelope.
type Pair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (e *Envelope) flags() uint8 {
	var f uint8
	if e.MessageID != 0 {
		f |= EnvMessageID
	}
	if e.Header != "" {
		f |= EnvHeader
	}
	if len(e.Pairs) != 0 {
		f |= EnvPairs
	}
	return f
}

// check validates e for encoding as part of kind k.
func (e *Envelope) check(k Kind) error {
	c := checker{k: k}
	if (k == KindRequest || k == KindResponse) && e.MessageID == 0 {
		c.fail("message_id", ProblemMissing)
	}
	if e.Header != "" {
		c.str("header", e.Header, 1, MaxHeaderLen)
	}
	if len(e.Pairs) > MaxPairs {
		c.fail("pairs", ProblemOverCap)
	}
	for i := range e.Pairs {
		p := &e.Pairs[i]
		c.str("key", p.Key, 1, MaxKeyLen)
		c.str("value", p.Value, 0, MaxValueLen)
		if i > 0 && p.Key <= e.Pairs[i-1].Key {
			c.fail("key", ProblemNotAscend)
		}
	}
	return c.err
}

// size returns the encoded size of e.
func (e *Envelope) size() int {
	n := 1 + len(e.Payload)
	if e.MessageID != 0 {
		n += 8
	}
	if e.Header != "" {
		n += 2 + len(e.Header)
	}
	if len(e.Pairs) != 0 {
		n++
		for i := range e.Pairs {
			n += 1 + len(e.Pairs[i].Key) + 2 + len(e.Pairs[i].Value)
		}
	}
	return n
}

func (e *Envelope) append(b []byte) []byte {
	f := e.flags()
	b = append(b, f)
	if f&EnvMessageID != 0 {
		b = appendU64(b, e.MessageID)
	}
	if f&EnvHeader != 0 {
		b = appendBytes16(b, e.Header)
	}
	if f&EnvPairs != 0 {
		b = append(b, byte(len(e.Pairs)))
		for i := range e.Pairs {
			b = appendBytes8(b, e.Pairs[i].Key)
			b = appendBytes16(b, e.Pairs[i].Value)
		}
	}
	return append(b, e.Payload...)
}

// read decodes the envelope from r to the end of its bytes.
func (e *Envelope) read(r *reader) {
	*e = Envelope{}
	f := r.flags("env_flags", envFlagBits)
	if f&EnvMessageID != 0 {
		if e.MessageID = r.u64("message_id"); e.MessageID == 0 {
			r.fail("message_id", ProblemBadValue)
		}
	}
	if (r.k == KindRequest || r.k == KindResponse) && f&EnvMessageID == 0 {
		r.fail("message_id", ProblemMissing)
	}
	if f&EnvHeader != 0 {
		e.Header = r.str16("header", 1, MaxHeaderLen)
	}
	if f&EnvPairs != 0 {
		n := int(r.u8("pairs"))
		switch {
		case r.err != nil:
		case n == 0:
			r.fail("pairs", ProblemEmpty)
		case n > MaxPairs:
			r.fail("pairs", ProblemOverCap)
		default:
			e.Pairs = make([]Pair, 0, min(n, (len(r.b)-r.off)/3))
		}
		for i := 0; i < n && r.err == nil; i++ {
			k := r.bytes8("key", 1, MaxKeyLen)
			if i > 0 && r.err == nil && strings.Compare(string(k), e.Pairs[i-1].Key) <= 0 {
				r.fail("key", ProblemNotAscend)
			}
			p := Pair{Key: r.utf8("key", k)}
			p.Value = r.str16("value", 0, MaxValueLen)
			e.Pairs = append(e.Pairs, p)
		}
	}
	e.Payload = r.rest()
	if r.err != nil {
		*e = Envelope{}
	}
}

// AppendTo appends e alone (no routing header), as a jumbo message is
// reassembled and a reliable-channel message is sent.
func (e *Envelope) AppendTo(b []byte) ([]byte, error) {
	if err := e.check(KindNone); err != nil {
		return b, err
	}
	return e.append(b), nil
}

// Unmarshal decodes an envelope that is the whole of data (no routing
// header). Payload aliases data.
func (e *Envelope) Unmarshal(data []byte) error {
	r := reader{b: data}
	e.read(&r)
	return r.end()
}

// PeekMessageID returns the message id of the envelope that follows the
// routing header r decoded from body, or 0 when r's kind carries no
// envelope, the envelope has no message id or is too short to hold it. A hub
// uses it to put the id of a message it refuses (an unknown destination, a
// rate limit) in its ERROR without decoding the envelope; it allocates
// nothing.
func PeekMessageID(body []byte, r *Routing) uint64 {
	switch r.Kind {
	case KindMessage, KindRequest, KindResponse, KindUDPMessage:
	default:
		return 0
	}
	off := r.Size
	if off+9 > len(body) || body[off]&EnvMessageID == 0 {
		return 0
	}
	return binary.BigEndian.Uint64(body[off+1 : off+9])
}
