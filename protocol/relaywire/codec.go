package relaywire

import "encoding/binary"

// Peek checks the header of the message in data and returns its type,
// without decoding the body. It fails with a [*FieldError] (Type TypeNone)
// for a header that is short, does not start DA 72 or has a version other
// than 0, and with [ErrUnknownType] (returning the type byte) for a type
// that is not one of the twelve. It allocates nothing.
func Peek(data []byte) (Type, error) {
	if err := checkHeader(data, TypeNone); err != nil {
		return TypeNone, err
	}
	t := Type(data[3])
	if !t.Known() {
		return t, ErrUnknownType
	}
	return t, nil
}

// Decode decodes one whole message into a newly allocated value. It fails
// as [Peek] does and then as the type's Unmarshal does. Byte slices alias
// data. Hot paths use [Peek] and a reused value's Unmarshal instead.
func Decode(data []byte) (Message, error) {
	t, err := Peek(data)
	if err != nil {
		return nil, err
	}
	m := New(t)
	if err := m.Unmarshal(data); err != nil {
		return nil, err
	}
	return m, nil
}

// Append appends the encoding of m to b. It is m.AppendTo(b).
func Append(b []byte, m Message) ([]byte, error) { return m.AppendTo(b) }

// checkHeader checks the four header bytes, field by field: a field is
// checked once it is whole. want is the expected type, or TypeNone for any.
func checkHeader(data []byte, want Type) error {
	e := errTable[want]
	switch {
	case len(data) < 2:
		return e.sigTruncated
	case data[0] != Signature0 || data[1] != Signature1:
		return e.badSignature
	case len(data) < 3:
		return e.verTruncated
	case data[2] != Version:
		return e.badVersion
	case len(data) < 4:
		return e.typeTruncated
	case want != TypeNone && Type(data[3]) != want:
		return e.wrongType
	}
	return nil
}

// checkSize checks the header and that data holds at least min bytes and,
// when exact, no more: the error names the first field that runs past the
// end, or "message" for trailing bytes.
func checkSize(data []byte, t Type, min int, exact bool) error {
	if err := checkHeader(data, t); err != nil {
		return err
	}
	if exact && len(data) > min {
		return errTable[t].trailing
	}
	if len(data) >= min {
		return nil
	}
	off := HeaderSize
	for i, f := range bodies[t] {
		off += f.size
		if len(data) < off {
			return errTable[t].truncated[i]
		}
	}
	panic("relaywire: the fields of " + t.String() + " do not add up to its size")
}

func appendHeader(b []byte, t Type) []byte {
	return append(b, Signature0, Signature1, Version, byte(t))
}

func id(data []byte, off int) (v AllocationID) {
	copy(v[:], data[off:off+AllocationIDSize])
	return v
}

// AppendTo implements [Message]. It fails when AcceptMode is not 0 or
// ConnectionData has non-zero bytes after ConnectionDataLength.
func (m *Bind) AppendTo(b []byte) ([]byte, error) {
	if err := m.check(); err != nil {
		return b, err
	}
	b = m.appendSigned(b)
	return append(b, m.HMAC[:]...), nil
}

func (m *Bind) check() error {
	if m.AcceptMode != AcceptModeAuto {
		return errBindAcceptMode
	}
	if !m.ConnectionData.paddedFrom(m.ConnectionDataLength) {
		return errBindPadding
	}
	return nil
}

// appendSigned appends the first BindSignedSize bytes of m.
func (m *Bind) appendSigned(b []byte) []byte {
	b = appendHeader(b, TypeBind)
	b = append(b, m.AcceptMode)
	b = binary.LittleEndian.AppendUint16(b, m.Nonce)
	b = append(b, m.ConnectionDataLength)
	return append(b, m.ConnectionData[:]...)
}

// Unmarshal implements [Message]. Besides the size, it checks that the
// accept mode is 0 and that the connection data is zero after its length;
// it does not check the HMAC ([Bind.Verify] does).
func (m *Bind) Unmarshal(data []byte) error {
	*m = Bind{}
	if err := checkSize(data, TypeBind, BindSize, true); err != nil {
		return err
	}
	m.AcceptMode = data[4]
	m.Nonce = binary.LittleEndian.Uint16(data[5:7])
	m.ConnectionDataLength = data[7]
	copy(m.ConnectionData[:], data[8:BindSignedSize])
	copy(m.HMAC[:], data[BindSignedSize:])
	if err := m.check(); err != nil {
		*m = Bind{}
		return err
	}
	return nil
}

// AppendTo implements [Message]. It never fails.
func (m *BindReceived) AppendTo(b []byte) ([]byte, error) {
	return appendHeader(b, TypeBindReceived), nil
}

// Unmarshal implements [Message].
func (m *BindReceived) Unmarshal(data []byte) error {
	return checkSize(data, TypeBindReceived, BindReceivedSize, true)
}

// AppendTo implements [Message]. It never fails.
func (m *Ping) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypePing)
	b = append(b, m.From[:]...)
	return binary.LittleEndian.AppendUint16(b, m.Sequence), nil
}

// Unmarshal implements [Message].
func (m *Ping) Unmarshal(data []byte) error {
	*m = Ping{}
	if err := checkSize(data, TypePing, PingSize, true); err != nil {
		return err
	}
	m.From = id(data, 4)
	m.Sequence = binary.LittleEndian.Uint16(data[20:22])
	return nil
}

// AppendTo implements [Message]. It fails when ToConnectionData has
// non-zero bytes after ToConnectionDataLength.
func (m *ConnectRequest) AppendTo(b []byte) ([]byte, error) {
	if !m.ToConnectionData.paddedFrom(m.ToConnectionDataLength) {
		return b, errConnectPadding
	}
	b = appendHeader(b, TypeConnectRequest)
	b = append(b, m.AllocationID[:]...)
	b = append(b, m.ToConnectionDataLength)
	return append(b, m.ToConnectionData[:]...), nil
}

// Unmarshal implements [Message]. Besides the size, it checks that the
// connection data is zero after its length.
func (m *ConnectRequest) Unmarshal(data []byte) error {
	*m = ConnectRequest{}
	if err := checkSize(data, TypeConnectRequest, ConnectRequestSize, true); err != nil {
		return err
	}
	m.AllocationID = id(data, 4)
	m.ToConnectionDataLength = data[20]
	copy(m.ToConnectionData[:], data[21:])
	if !m.ToConnectionData.paddedFrom(m.ToConnectionDataLength) {
		*m = ConnectRequest{}
		return errConnectPadding
	}
	return nil
}

// appendPair appends a header and two allocation ids: ACCEPTED, REJECTED,
// DISCONNECT.
func appendPair(b []byte, t Type, from, to *AllocationID) []byte {
	b = appendHeader(b, t)
	b = append(b, from[:]...)
	return append(b, to[:]...)
}

// unmarshalPair decodes the messages appendPair encodes.
func unmarshalPair(data []byte, t Type, from, to *AllocationID) error {
	*from, *to = AllocationID{}, AllocationID{}
	if err := checkSize(data, t, 36, true); err != nil {
		return err
	}
	*from, *to = id(data, 4), id(data, 20)
	return nil
}

// AppendTo implements [Message]. It never fails.
func (m *Accepted) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeAccepted, &m.From, &m.To), nil
}

// Unmarshal implements [Message].
func (m *Accepted) Unmarshal(data []byte) error {
	return unmarshalPair(data, TypeAccepted, &m.From, &m.To)
}

// AppendTo implements [Message]. It never fails.
func (m *Rejected) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeRejected, &m.From, &m.To), nil
}

// Unmarshal implements [Message].
func (m *Rejected) Unmarshal(data []byte) error {
	return unmarshalPair(data, TypeRejected, &m.From, &m.To)
}

// AppendTo implements [Message]. It never fails.
func (m *Disconnect) AppendTo(b []byte) ([]byte, error) {
	return appendPair(b, TypeDisconnect, &m.From, &m.To), nil
}

// Unmarshal implements [Message].
func (m *Disconnect) Unmarshal(data []byte) error {
	return unmarshalPair(data, TypeDisconnect, &m.From, &m.To)
}

// AppendTo implements [Message]. It fails when Data is over
// MaxRelayPayload bytes.
func (m *Relay) AppendTo(b []byte) ([]byte, error) {
	if len(m.Data) > MaxRelayPayload {
		return b, errRelayOverCap
	}
	b = appendPair(b, TypeRelay, &m.From, &m.To)
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Data)))
	return append(b, m.Data...), nil
}

// Unmarshal implements [Message]: data_length must equal the number of
// bytes after it. Data aliases data. It allocates nothing, so a relay
// decodes every datagram it forwards into one reused value.
func (m *Relay) Unmarshal(data []byte) error {
	*m = Relay{}
	if err := checkSize(data, TypeRelay, RelayHeaderSize, false); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint16(data[36:38]))
	switch rest := len(data) - RelayHeaderSize; {
	case rest < n:
		return errRelayDataTrunc
	case rest > n:
		return errRelayDataTrailer
	}
	m.From, m.To = id(data, 4), id(data, 20)
	m.Data = data[RelayHeaderSize:len(data):len(data)]
	return nil
}

// AppendTo implements [Message]: the bare header, or the header and
// AllocationID when HasAllocationID is set. It never fails.
func (m *Close) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypeClose)
	if m.HasAllocationID {
		b = append(b, m.AllocationID[:]...)
	}
	return b, nil
}

// Unmarshal implements [Message]: 4 or 20 bytes.
func (m *Close) Unmarshal(data []byte) error {
	*m = Close{}
	if len(data) == CloseSize {
		return checkHeader(data, TypeClose)
	}
	if err := checkSize(data, TypeClose, CloseWithIDSize, true); err != nil {
		return err
	}
	m.HasAllocationID, m.AllocationID = true, id(data, 4)
	return nil
}

// AppendTo implements [Message]. It never fails, whatever the code.
func (m *Error) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypeError)
	b = append(b, m.AllocationID[:]...)
	return append(b, byte(m.Code)), nil
}

// Unmarshal implements [Message]. It accepts every code, as Unity Transport
// does (it logs the ones it does not know).
func (m *Error) Unmarshal(data []byte) error {
	*m = Error{}
	if err := checkSize(data, TypeError, ErrorSize, true); err != nil {
		return err
	}
	m.AllocationID, m.Code = id(data, 4), ErrorCode(data[20])
	return nil
}

// AppendTo implements [Message]. It never fails.
func (m *PeersSubscribe) AppendTo(b []byte) ([]byte, error) {
	b = appendHeader(b, TypePeersSubscribe)
	return append(b, m.AllocationID[:]...), nil
}

// Unmarshal implements [Message].
func (m *PeersSubscribe) Unmarshal(data []byte) error {
	*m = PeersSubscribe{}
	if err := checkSize(data, TypePeersSubscribe, PeersSubscribeSize, true); err != nil {
		return err
	}
	m.AllocationID = id(data, 4)
	return nil
}

// AppendTo implements [Message]. It fails when Event is not one of the
// three events.
func (m *PeerEvent) AppendTo(b []byte) ([]byte, error) {
	if !m.Event.Known() {
		return b, errPeerEventKind
	}
	b = appendHeader(b, TypePeerEvent)
	b = append(b, byte(m.Event))
	return append(b, m.Peer[:]...), nil
}

// Unmarshal implements [Message]. Besides the size, it checks that the
// event is one of the three.
func (m *PeerEvent) Unmarshal(data []byte) error {
	*m = PeerEvent{}
	if err := checkSize(data, TypePeerEvent, PeerEventSize, true); err != nil {
		return err
	}
	if !PeerEventKind(data[4]).Known() {
		return errPeerEventKind
	}
	m.Event, m.Peer = PeerEventKind(data[4]), id(data, 5)
	return nil
}
