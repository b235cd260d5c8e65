package p2pwire

// Message is one decoded frame body or opened datagram. AppendTo appends the
// whole body, routing header first, refusing what a decoder would refuse;
// Unmarshal decodes a whole body of the message's kind (another kind fails
// with wrong_kind). Byte slices alias the decoded body.
type Message interface {
	Kind() Kind
	AppendTo(b []byte) ([]byte, error)
	Unmarshal(body []byte) error
}

// New returns a new zero message of kind k, or nil for a kind this version
// does not define.
func New(k Kind) Message {
	switch k {
	case KindHello:
		return new(Hello)
	case KindWelcome:
		return new(Welcome)
	case KindPeerSet:
		return new(PeerSet)
	case KindPeerEvents:
		return new(PeerEvents)
	case KindError:
		return new(Error)
	case KindPing:
		return new(Ping)
	case KindPong:
		return new(Pong)
	case KindGoodbye:
		return new(Goodbye)
	case KindMessage:
		return new(Msg)
	case KindRequest:
		return new(Request)
	case KindResponse:
		return new(Response)
	case KindRegister:
		return new(Register)
	case KindRegistered:
		return new(Registered)
	case KindUDPMessage:
		return new(UDPMsg)
	case KindReliable:
		return new(Reliable)
	case KindJumbo:
		return new(Jumbo)
	case KindPunchRequest:
		return new(PunchRequest)
	case KindPunchOffer:
		return new(PunchOffer)
	case KindPunchResult:
		return new(PunchResult)
	case KindPunchProbe:
		return new(PunchProbe)
	case KindPunchAck:
		return new(PunchAck)
	case KindPathChallenge:
		return new(PathChallenge)
	case KindPathResponse:
		return new(PathResponse)
	}
	return nil
}

// Decode decodes a whole body into a new message of the kind its first byte
// names. It fails with [ErrUnknownKind] or a [*FieldError]. Hot paths use
// [DecodeRouting], or a reused value's Unmarshal.
func Decode(body []byte) (Message, error) {
	h, err := DecodeRouting(body)
	if err != nil {
		return nil, err
	}
	m := New(h.Kind)
	if err := m.Unmarshal(body); err != nil {
		return nil, err
	}
	return m, nil
}

// Append appends the body of m to b: m.AppendTo(b).
func Append(b []byte, m Message) ([]byte, error) { return m.AppendTo(b) }

// Routed messages: MESSAGE, REQUEST, RESPONSE (TLS), UDP_MESSAGE (UDP). Each
// is a routing header followed by an [Envelope]; REQUEST and RESPONSE need a
// message id and cannot be broadcast.

// Msg is a MESSAGE: one-way, to one peer or broadcast.
type Msg struct {
	Route
	Envelope
}

// Request is a REQUEST: to one peer, answered by a RESPONSE with the same
// message id.
type Request struct {
	Route
	Envelope
}

// Response is a RESPONSE to the REQUEST with the same message id.
type Response struct {
	Route
	Envelope
}

// UDPMsg is a UDP_MESSAGE: unreliable, to one peer or broadcast, through the
// hub or direct. Its envelope is at most MaxRoutedRest bytes; a larger one
// is sent as JUMBO fragments.
type UDPMsg struct {
	Route
	Envelope
}

func appendRouted(b []byte, k Kind, rt *Route, e *Envelope) ([]byte, error) {
	if err := e.check(k); err != nil {
		return b, err
	}
	start := len(b)
	b, err := appendRouting(b, k, rt)
	if err != nil {
		return b[:start], err
	}
	return e.append(b), nil
}

func unmarshalRouted(body []byte, k Kind, rt *Route, e *Envelope) error {
	*rt, *e = Route{}, Envelope{}
	r, err := startBody(body, k, rt)
	if err != nil {
		*rt = Route{}
		return err
	}
	e.read(&r)
	if err := r.end(); err != nil {
		*rt = Route{}
		return err
	}
	return nil
}

// Kind implements [Message].
func (*Msg) Kind() Kind { return KindMessage }

// AppendTo implements [Message].
func (m *Msg) AppendTo(b []byte) ([]byte, error) {
	return appendRouted(b, KindMessage, &m.Route, &m.Envelope)
}

// Unmarshal implements [Message].
func (m *Msg) Unmarshal(body []byte) error {
	return unmarshalRouted(body, KindMessage, &m.Route, &m.Envelope)
}

// Kind implements [Message].
func (*Request) Kind() Kind { return KindRequest }

// AppendTo implements [Message].
func (m *Request) AppendTo(b []byte) ([]byte, error) {
	return appendRouted(b, KindRequest, &m.Route, &m.Envelope)
}

// Unmarshal implements [Message].
func (m *Request) Unmarshal(body []byte) error {
	return unmarshalRouted(body, KindRequest, &m.Route, &m.Envelope)
}

// Kind implements [Message].
func (*Response) Kind() Kind { return KindResponse }

// AppendTo implements [Message].
func (m *Response) AppendTo(b []byte) ([]byte, error) {
	return appendRouted(b, KindResponse, &m.Route, &m.Envelope)
}

// Unmarshal implements [Message].
func (m *Response) Unmarshal(body []byte) error {
	return unmarshalRouted(body, KindResponse, &m.Route, &m.Envelope)
}

// Kind implements [Message].
func (*UDPMsg) Kind() Kind { return KindUDPMessage }

// AppendTo implements [Message].
func (m *UDPMsg) AppendTo(b []byte) ([]byte, error) {
	if m.Envelope.size() > MaxRoutedRest {
		return b, fieldErr(KindUDPMessage, "datagram", ProblemTooLarge)
	}
	return appendRouted(b, KindUDPMessage, &m.Route, &m.Envelope)
}

// Unmarshal implements [Message].
func (m *UDPMsg) Unmarshal(body []byte) error {
	return unmarshalRouted(body, KindUDPMessage, &m.Route, &m.Envelope)
}
