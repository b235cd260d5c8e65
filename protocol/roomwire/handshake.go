package roomwire

import "encoding/binary"

// HandshakeKind is the first byte of the handshake.
type HandshakeKind uint8

// Handshake kinds.
const (
	KindHello  HandshakeKind = 1 // token is the connect ticket, message a HELLO
	KindResume HandshakeKind = 2 // token is the resume token, message a RESUME
)

// Handshake is the first binary WebSocket message a client sends:
//
//	u8 kind | u16 token length (big-endian) | token | HELLO or RESUME message
//
// Exactly one of Hello and Resume is set, matching Kind.
type Handshake struct {
	Kind   HandshakeKind
	Token  []byte // the connect ticket's UTF-8 bytes or the resume token; aliases the input
	Hello  *Hello
	Resume *Resume
}

// AppendHandshake appends a handshake to b. The message must be a *Hello for
// [KindHello] and a *Resume for [KindResume]; the token is at most
// [MaxConnectTicketLen] or [MaxResumeTokenLen] bytes. On error it returns b
// unchanged and a [*FieldError].
func AppendHandshake(b []byte, kind HandshakeKind, token []byte, msg Message) ([]byte, error) {
	switch kind {
	case KindHello:
		if _, ok := msg.(*Hello); !ok {
			return b, fieldErr(0, "message", ProblemKindMismatch)
		}
		if len(token) > MaxConnectTicketLen {
			return b, fieldErr(0, "token", ProblemTokenTooLong)
		}
	case KindResume:
		if _, ok := msg.(*Resume); !ok {
			return b, fieldErr(0, "message", ProblemKindMismatch)
		}
		if len(token) > MaxResumeTokenLen {
			return b, fieldErr(0, "token", ProblemTokenTooLong)
		}
	default:
		return b, fieldErr(0, "kind", ProblemBadKind)
	}
	orig := b
	b = append(b, byte(kind))
	b = binary.BigEndian.AppendUint16(b, uint16(len(token)))
	b = append(b, token...)
	b, err := msg.AppendTo(b)
	if err != nil {
		return orig, err // like every encoder: b unchanged on error
	}
	return b, nil
}

// ParseHandshake decodes a handshake. Errors are [*FieldError] values with
// Type 0 for the framing, or the inner message's type for the message; all
// match [ErrInvalid]. The node answers any of them with ERROR 6
// protocol_unsupported.
func ParseHandshake(data []byte) (Handshake, error) {
	var h Handshake
	r := reader{b: data}
	h.Kind = HandshakeKind(r.u8("kind"))
	if r.err != nil {
		return Handshake{}, r.err
	}
	limit := MaxConnectTicketLen
	switch h.Kind {
	case KindHello:
	case KindResume:
		limit = MaxResumeTokenLen
	default:
		return Handshake{}, fieldErr(0, "kind", ProblemBadKind)
	}
	n := int(r.u16("token_length"))
	if r.err != nil {
		return Handshake{}, r.err
	}
	if n > limit {
		return Handshake{}, fieldErr(0, "token", ProblemTokenTooLong)
	}
	h.Token = r.take(n, "token")
	if r.err != nil {
		return Handshake{}, r.err
	}
	msg := data[r.off:]
	if len(msg) == 0 {
		return Handshake{}, fieldErr(0, "message", ProblemEmpty)
	}
	switch {
	case h.Kind == KindHello && Type(msg[0]) == TypeHello:
		h.Hello = new(Hello)
		if err := h.Hello.Unmarshal(msg); err != nil {
			return Handshake{}, err
		}
	case h.Kind == KindResume && Type(msg[0]) == TypeResume:
		h.Resume = new(Resume)
		if err := h.Resume.Unmarshal(msg); err != nil {
			return Handshake{}, err
		}
	default:
		return Handshake{}, fieldErr(0, "message", ProblemKindMismatch)
	}
	return h, nil
}
