package p2pwire

// Path validation (docs/protocol/p2p.md §12.4), QUIC's (RFC 9000 §8.2)
// adapted. A datagram sealed with a peer's key proves that its sender
// holds the key, not that it owns the source address: the key's holder
// can forge the source. So when a peer's authenticated datagrams come
// from an endpoint the hub has not validated, the hub sends there a
// PATH_CHALLENGE of PathDataSize random bytes, and holds what it sends
// there to a budget until a PATH_RESPONSE carrying the same bytes comes
// back from that endpoint.

// PathDataSize is the size of a PATH_CHALLENGE's and a PATH_RESPONSE's
// data: 8 bytes, as in QUIC.
const PathDataSize = 8

// PathData is the data of a PATH_CHALLENGE or a PATH_RESPONSE: random
// bytes the hub draws for each endpoint it checks.
type PathData [PathDataSize]byte

// PathChallenge is sent by the hub to an endpoint of a peer it has not
// validated, sealed with the peer's key:
//
//	data  8 bytes: random, drawn by the hub for this endpoint
//
// A peer answers every authenticated PATH_CHALLENGE from the hub at once
// with a PATH_RESPONSE carrying the same data, from the socket it came on.
type PathChallenge struct {
	Data PathData `json:"data"`
}

// PathResponse is a peer's answer to a PATH_CHALLENGE, sealed with its
// key and sent to the hub from the socket the challenge came on:
//
//	data  8 bytes: the challenge's
type PathResponse struct {
	Data PathData `json:"data"`
}

// Kind implements [Message].
func (*PathChallenge) Kind() Kind { return KindPathChallenge }

// AppendTo implements [Message]. It never fails.
func (m *PathChallenge) AppendTo(b []byte) ([]byte, error) {
	b, _ = appendRouting(b, KindPathChallenge, nil)
	return append(b, m.Data[:]...), nil
}

// Unmarshal implements [Message].
func (m *PathChallenge) Unmarshal(body []byte) error {
	return unmarshalPath(body, KindPathChallenge, &m.Data)
}

// Kind implements [Message].
func (*PathResponse) Kind() Kind { return KindPathResponse }

// AppendTo implements [Message]. It never fails.
func (m *PathResponse) AppendTo(b []byte) ([]byte, error) {
	b, _ = appendRouting(b, KindPathResponse, nil)
	return append(b, m.Data[:]...), nil
}

// Unmarshal implements [Message].
func (m *PathResponse) Unmarshal(body []byte) error {
	return unmarshalPath(body, KindPathResponse, &m.Data)
}

func unmarshalPath(body []byte, k Kind, d *PathData) error {
	*d = PathData{}
	r, err := startBody(body, k, nil)
	if err != nil {
		return err
	}
	p := r.take(PathDataSize, "data")
	if err := r.end(); err != nil {
		return err
	}
	*d = PathData(p)
	return nil
}
