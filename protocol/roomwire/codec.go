package roomwire

// Decode decodes one whole message into a newly allocated value. It returns
// [ErrUnknownType] for a type version 1 does not define and a [*FieldError]
// for invalid bytes. Byte fields alias data. Hot paths use [Peek] and a
// reused value's Unmarshal instead.
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

// Peek returns the type of the message in data without decoding it. It fails
// with a [*FieldError] for an empty message and [ErrUnknownType] for a type
// version 1 does not define.
func Peek(data []byte) (Type, error) {
	if len(data) == 0 {
		return 0, fieldErr(0, "type", ProblemEmpty)
	}
	t := Type(data[0])
	if !t.Known() {
		return t, ErrUnknownType
	}
	return t, nil
}

// Append appends the encoding of m to b. It is m.AppendTo(b).
func Append(b []byte, m Message) ([]byte, error) { return m.AppendTo(b) }

// start begins decoding a message of type t.
func start(data []byte, t Type) reader {
	r := reader{b: data, t: t}
	if len(data) == 0 {
		r.fail("type", ProblemEmpty)
		return r
	}
	if Type(data[0]) != t {
		r.fail("type", ProblemWrongType)
		return r
	}
	r.off = 1
	return r
}

// AppendTo implements [Message].
func (m *Hello) AppendTo(b []byte) ([]byte, error) {
	if err := checkString(TypeHello, "sdk_version", m.SDKVersion, MaxSDKVersionLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeHello))
	b = appendU64(b, m.ClientNonce)
	return appendString(b, m.SDKVersion), nil
}

// Unmarshal implements [Message].
func (m *Hello) Unmarshal(data []byte) error {
	r := start(data, TypeHello)
	m.ClientNonce = r.u64("client_nonce")
	m.SDKVersion = r.str("sdk_version", MaxSDKVersionLen)
	return r.end()
}

// AppendTo implements [Message].
func (m *Welcome) AppendTo(b []byte) ([]byte, error) {
	if len(m.Members) > MaxMembers {
		return b, fieldErr(TypeWelcome, "members", ProblemOverCap)
	}
	for i := range m.Members {
		if err := checkString(TypeWelcome, "username", m.Members[i].Username, MaxUsernameLen); err != nil {
			return b, err
		}
	}
	if err := checkBytes(TypeWelcome, "resume_token", m.ResumeToken, MaxResumeTokenLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeWelcome))
	b = appendU32(b, m.Conv)
	b = append(b, m.Seat, m.SyncMode, m.TickRate, m.RoomState)
	b = appendU32(b, m.StartFrame)
	b = appendU32(b, m.Frame)
	b = append(b, byte(len(m.Members))) // a one-byte uvarint: ≤ MaxMembers
	for _, mem := range m.Members {
		b = append(b, mem.Seat)
		b = appendString(b, mem.Username)
		b = appendBool(b, mem.Online)
	}
	b = appendBytes(b, m.ResumeToken)
	b = appendU64(b, m.ServerTimeMS)
	b = append(b, byte(m.SnapshotSeat), m.MaxPlayers)
	return b, nil
}

// Unmarshal implements [Message].
func (m *Welcome) Unmarshal(data []byte) error {
	r := start(data, TypeWelcome)
	m.Conv = r.u32("conv")
	m.Seat = r.u8("seat")
	m.SyncMode = r.u8("sync_mode")
	m.TickRate = r.u8("tick_rate")
	m.RoomState = r.u8("room_state")
	m.StartFrame = r.u32("start_frame")
	m.Frame = r.u32("frame")
	n := r.length("members", MaxMembers)
	m.Members = m.Members[:0]
	for i := 0; i < n && r.err == nil; i++ {
		var mem MemberInfo
		mem.Seat = r.u8("seat")
		mem.Username = r.str("username", MaxUsernameLen)
		mem.Online = r.boolean("online")
		m.Members = append(m.Members, mem)
	}
	m.ResumeToken = r.bytes("resume_token", MaxResumeTokenLen)
	m.ServerTimeMS = r.u64("server_time_ms")
	m.SnapshotSeat = int8(r.u8("snapshot_seat"))
	m.MaxPlayers = r.u8("max_players")
	return r.end()
}

// AppendTo implements [Message].
func (m *Resume) AppendTo(b []byte) ([]byte, error) {
	b = append(b, byte(TypeResume))
	b = appendU64(b, m.ClientNonce)
	return appendU32(b, m.LastFrame), nil
}

// Unmarshal implements [Message].
func (m *Resume) Unmarshal(data []byte) error {
	r := start(data, TypeResume)
	m.ClientNonce = r.u64("client_nonce")
	m.LastFrame = r.u32("last_frame")
	return r.end()
}

// AppendTo implements [Message].
func (m *Input) AppendTo(b []byte) ([]byte, error) {
	if err := checkBytes(TypeInput, "data", m.Data, MaxInputLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeInput))
	b = appendU32(b, m.AckFrame)
	return appendBytes(b, m.Data), nil
}

// Unmarshal implements [Message].
func (m *Input) Unmarshal(data []byte) error {
	r := start(data, TypeInput)
	m.AckFrame = r.u32("ack_frame")
	m.Data = r.bytes("data", MaxInputLen)
	return r.end()
}

// AppendTo implements [Message].
func (m *Frame) AppendTo(b []byte) ([]byte, error) {
	return appendFrames(b, TypeFrame, m.Frames, MaxFramesPerFrame)
}

// Unmarshal implements [Message]. It reuses m.Frames and the Inputs slices
// inside it, so decoding into the same value allocates nothing once they
// have grown. On error m.Frames is empty.
func (m *Frame) Unmarshal(data []byte) error {
	r := start(data, TypeFrame)
	m.Frames = r.frames(m.Frames, MaxFramesPerFrame)
	if err := r.end(); err != nil {
		m.Frames = m.Frames[:0] // trailing bytes: drop the frames read before them
		return err
	}
	return nil
}

// AppendTo implements [Message].
func (m *FrameReq) AppendTo(b []byte) ([]byte, error) {
	b = append(b, byte(TypeFrameReq))
	b = appendU32(b, m.From)
	return appendU32(b, m.To), nil
}

// Unmarshal implements [Message].
func (m *FrameReq) Unmarshal(data []byte) error {
	r := start(data, TypeFrameReq)
	m.From = r.u32("from")
	m.To = r.u32("to")
	return r.end()
}

// AppendTo implements [Message].
func (m *FrameBatch) AppendTo(b []byte) ([]byte, error) {
	return appendFrames(b, TypeFrameBatch, m.Frames, MaxFramesPerBatch)
}

// Unmarshal implements [Message]. Like [Frame.Unmarshal] it reuses slices,
// and on error m.Frames is empty.
func (m *FrameBatch) Unmarshal(data []byte) error {
	r := start(data, TypeFrameBatch)
	m.Frames = r.frames(m.Frames, MaxFramesPerBatch)
	if err := r.end(); err != nil {
		m.Frames = m.Frames[:0]
		return err
	}
	return nil
}

// AppendTo implements [Message].
func (m *Custom) AppendTo(b []byte) ([]byte, error) {
	if err := checkBytes(TypeCustom, "data", m.Data, MaxCustomLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeCustom))
	b = appendU16(b, m.To)
	b = append(b, m.From)
	b = appendBool(b, m.Reliable)
	return appendBytes(b, m.Data), nil
}

// Unmarshal implements [Message].
func (m *Custom) Unmarshal(data []byte) error {
	r := start(data, TypeCustom)
	m.To = r.u16("to")
	m.From = r.u8("from")
	m.Reliable = r.boolean("reliable")
	m.Data = r.bytes("data", MaxCustomLen)
	return r.end()
}

// AppendTo implements [Message].
func (*Ready) AppendTo(b []byte) ([]byte, error) { return append(b, byte(TypeReady)), nil }

// Unmarshal implements [Message].
func (*Ready) Unmarshal(data []byte) error { r := start(data, TypeReady); return r.end() }

// AppendTo implements [Message].
func (*Start) AppendTo(b []byte) ([]byte, error) { return append(b, byte(TypeStart)), nil }

// Unmarshal implements [Message].
func (*Start) Unmarshal(data []byte) error { r := start(data, TypeStart); return r.end() }

// AppendTo implements [Message].
func (*Leave) AppendTo(b []byte) ([]byte, error) { return append(b, byte(TypeLeave)), nil }

// Unmarshal implements [Message].
func (*Leave) Unmarshal(data []byte) error { r := start(data, TypeLeave); return r.end() }

// AppendTo implements [Message].
func (m *RoomState) AppendTo(b []byte) ([]byte, error) {
	if err := checkString(TypeRoomState, "reason", m.Reason, MaxReasonLen); err != nil {
		return b, err
	}
	if err := checkBytes(TypeRoomState, "result", m.Result, MaxResultLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeRoomState), m.State)
	b = appendU32(b, m.StartFrame)
	b = appendString(b, m.Reason)
	return appendBytes(b, m.Result), nil
}

// Unmarshal implements [Message].
func (m *RoomState) Unmarshal(data []byte) error {
	r := start(data, TypeRoomState)
	m.State = r.u8("state")
	m.StartFrame = r.u32("start_frame")
	m.Reason = r.str("reason", MaxReasonLen)
	m.Result = r.bytes("result", MaxResultLen)
	return r.end()
}

// AppendTo implements [Message].
func (m *Member) AppendTo(b []byte) ([]byte, error) {
	if err := checkString(TypeMember, "username", m.Username, MaxUsernameLen); err != nil {
		return b, err
	}
	if err := checkString(TypeMember, "reason", m.Reason, MaxReasonLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeMember), m.Seat)
	b = appendString(b, m.Username)
	b = append(b, m.Kind)
	return appendString(b, m.Reason), nil
}

// Unmarshal implements [Message].
func (m *Member) Unmarshal(data []byte) error {
	r := start(data, TypeMember)
	m.Seat = r.u8("seat")
	m.Username = r.str("username", MaxUsernameLen)
	m.Kind = r.u8("kind")
	m.Reason = r.str("reason", MaxReasonLen)
	return r.end()
}

// AppendTo implements [Message].
func (m *SnapshotPut) AppendTo(b []byte) ([]byte, error) {
	return appendSnapshot(b, TypeSnapshotPut, m.Frame, m.Data)
}

// Unmarshal implements [Message].
func (m *SnapshotPut) Unmarshal(data []byte) error {
	r := start(data, TypeSnapshotPut)
	m.Frame = r.u32("frame")
	m.Data = r.bytes("data", MaxSnapshotLen)
	return r.end()
}

// AppendTo implements [Message].
func (m *Snapshot) AppendTo(b []byte) ([]byte, error) {
	return appendSnapshot(b, TypeSnapshot, m.Frame, m.Data)
}

// Unmarshal implements [Message].
func (m *Snapshot) Unmarshal(data []byte) error {
	r := start(data, TypeSnapshot)
	m.Frame = r.u32("frame")
	m.Data = r.bytes("data", MaxSnapshotLen)
	return r.end()
}

func appendSnapshot(b []byte, t Type, frame uint32, data []byte) ([]byte, error) {
	if err := checkBytes(t, "data", data, MaxSnapshotLen); err != nil {
		return b, err
	}
	b = append(b, byte(t))
	b = appendU32(b, frame)
	return appendBytes(b, data), nil
}

// AppendTo implements [Message].
func (m *Ping) AppendTo(b []byte) ([]byte, error) {
	b = append(b, byte(TypePing))
	b = appendU64(b, m.ClientMS)
	return appendU32(b, m.RTTMS), nil
}

// Unmarshal implements [Message].
func (m *Ping) Unmarshal(data []byte) error {
	r := start(data, TypePing)
	m.ClientMS = r.u64("client_ms")
	m.RTTMS = r.u32("rtt_ms")
	return r.end()
}

// AppendTo implements [Message].
func (m *Pong) AppendTo(b []byte) ([]byte, error) {
	b = append(b, byte(TypePong))
	b = appendU64(b, m.ClientMS)
	return appendU64(b, m.ServerMS), nil
}

// Unmarshal implements [Message].
func (m *Pong) Unmarshal(data []byte) error {
	r := start(data, TypePong)
	m.ClientMS = r.u64("client_ms")
	m.ServerMS = r.u64("server_ms")
	return r.end()
}

// AppendTo implements [Message].
func (m *Error) AppendTo(b []byte) ([]byte, error) {
	if err := checkString(TypeError, "message", m.Message, MaxErrorMessageLen); err != nil {
		return b, err
	}
	if err := checkString(TypeError, "reason", m.Reason, MaxReasonLen); err != nil {
		return b, err
	}
	if err := checkBytes(TypeError, "result", m.Result, MaxResultLen); err != nil {
		return b, err
	}
	b = append(b, byte(TypeError), m.Code)
	b = appendString(b, m.Message)
	b = appendString(b, m.Reason)
	return appendBytes(b, m.Result), nil
}

// Unmarshal implements [Message].
func (m *Error) Unmarshal(data []byte) error {
	r := start(data, TypeError)
	m.Code = r.u8("code")
	m.Message = r.str("message", MaxErrorMessageLen)
	m.Reason = r.str("reason", MaxReasonLen)
	m.Result = r.bytes("result", MaxResultLen)
	return r.end()
}
