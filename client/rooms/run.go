package rooms

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Connect joins the room (C1, see [Client.Join]), connects to its game node
// and handshakes with HELLO. ctx bounds only this call; the Room lives until
// Close, Leave or the end of the room. A connect ticket that expired between
// C1 and HELLO is renewed once with the same client_session_id.
//
// Errors: the *APIError of Join, a *NodeError of the handshake (ErrRoomFull,
// ErrSeatTaken, ErrRoomNotFound, …), ErrUnsupportedVersion, or a network
// error.
func (c *Client) Connect(ctx context.Context, roomID string, opts JoinOptions) (*Room, error) {
	if opts.ClientSessionID == "" {
		opts.ClientSessionID = NewClientSessionID()
	}
	jr, err := c.Join(ctx, roomID, opts)
	if err != nil {
		return nil, err
	}
	r := c.newRoom(roomID, opts)
	conn, w, err := r.hello(ctx, jr)
	if err != nil && needsRejoin(err) {
		if jr, err = c.Join(ctx, roomID, opts); err == nil {
			conn, w, err = r.hello(ctx, jr)
		}
	}
	if err != nil {
		r.cancel()
		return nil, fmt.Errorf("connect %s: %w", roomID, err)
	}
	r.asm = frameassembly.New(w.Frame)
	r.lastFrame.Store(w.Frame)
	if opts.FromStart && w.Frame > 0 {
		r.asm.Reset(0)
		r.lastFrame.Store(0)
		if req, ok := r.asm.CatchUp(w.Frame); ok {
			_ = conn.sendFrameReq(req) // the queue is empty: cannot fail
			r.stats.frameReqs.Add(1)
		}
	}
	r.welcome(w)
	r.setConn(conn) // sends queue up until the writer starts
	r.log.Debug("rooms: connected", "seat", w.Seat, "frame", w.Frame, "transport", conn.transport())
	go r.run(conn)
	return r, nil
}

func (c *Client) newRoom(roomID string, opts JoinOptions) *Room {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Room{
		client:       c,
		cfg:          &c.cfg,
		log:          c.log.With("room", roomID),
		roomID:       roomID,
		csid:         opts.ClientSessionID,
		ticket:       opts.Ticket,
		frames:       make(chan Frame, c.cfg.FrameBuffer),
		events:       make(chan Event, c.cfg.EventBuffer),
		ctx:          ctx,
		cancel:       cancel,
		finished:     make(chan struct{}),
		snapInterval: c.cfg.SnapshotInterval,
	}
	r.state.RoomID = roomID
	r.state.SnapshotSeat = -1
	r.deliverFn = r.deliverFrame
	return r
}

// hello dials the node of a C1 answer with a HELLO handshake.
func (r *Room) hello(ctx context.Context, jr *JoinResult) (conn, *roomwire.Welcome, error) {
	if v := jr.Connect.ProtocolVersion; v != roomwire.Version {
		return nil, nil, fmt.Errorf("%w: %d", ErrUnsupportedVersion, v)
	}
	window := r.cfg.ReconnectWindow
	if window <= 0 {
		window = time.Duration(jr.Room.ReconnectWindowSeconds) * time.Second
	}
	if window <= 0 {
		window = DefaultReconnectWindow
	}
	var udp udpTarget
	haveUDP := false
	if r.cfg.Transport != TransportWS {
		var err error
		if udp, haveUDP, err = parseUDPTarget(&jr.Connect); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrHandshake, err)
		}
	}
	r.mu.Lock()
	r.wsURL = jr.Connect.WSURL
	r.udp, r.haveUDP = udp, haveUDP
	r.window = window
	r.mu.Unlock()
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(jr.Connect.ConnectTicket),
		&roomwire.Hello{ClientNonce: rand.Uint64(), SDKVersion: r.cfg.SDKVersion})
	if err != nil {
		return nil, nil, fmt.Errorf("hello: %w", err)
	}
	return r.dial(ctx, hs)
}

// dial sends the handshake hs to the node over UDP when the node serves it
// and Config.Transport allows, and over WebSocket otherwise or when UDP
// got no answer within Config.UDPFallback (docs/protocol/rooms-udp.md §6).
func (r *Room) dial(ctx context.Context, hs []byte) (conn, *roomwire.Welcome, error) {
	r.mu.Lock()
	url, udp, haveUDP := r.wsURL, r.udp, r.haveUDP
	r.mu.Unlock()
	switch {
	case r.cfg.Transport == TransportUDP && !haveUDP:
		return nil, nil, fmt.Errorf("%w: the node offers none", ErrUDPUnavailable)
	case r.cfg.Transport == TransportUDP:
		c, w, err := dialUDP(ctx, r.cfg, &r.stats, &udp, hs, r.cfg.HandshakeTimeout)
		if errors.Is(err, errUDPNoAnswer) {
			return nil, nil, fmt.Errorf("%w: %w", ErrUDPUnavailable, err)
		} else if err != nil {
			return nil, nil, err
		}
		return c, w, nil
	case haveUDP:
		c, w, err := dialUDP(ctx, r.cfg, &r.stats, &udp, hs, r.cfg.UDPFallback)
		if err == nil {
			return c, w, nil
		}
		if !errors.Is(err, errUDPNoAnswer) {
			return nil, nil, err
		}
		r.stats.fallbacks.Add(1)
		r.log.Info("rooms: no answer over udp, trying websocket", "after", r.cfg.UDPFallback)
	}
	c, w, err := dialNode(ctx, r.cfg, url, hs)
	if err != nil {
		return nil, nil, err
	}
	return c, w, nil
}

// resume dials the node again with a RESUME handshake.
func (r *Room) resume(ctx context.Context) (conn, *roomwire.Welcome, error) {
	r.mu.Lock()
	token := r.resumeToken
	r.mu.Unlock()
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, token,
		&roomwire.Resume{ClientNonce: rand.Uint64(), LastFrame: r.asm.Last()})
	if err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	return r.dial(ctx, hs)
}

// welcome takes the state of a WELCOME.
func (r *Room) welcome(w *roomwire.Welcome) {
	r.mu.Lock()
	s := &r.state
	s.Seat, s.SyncMode, s.TickRate = w.Seat, w.SyncMode, w.TickRate
	s.RoomState, s.StartFrame, s.MaxPlayers = w.RoomState, w.StartFrame, w.MaxPlayers
	s.SnapshotSeat = w.SnapshotSeat
	s.Members = s.Members[:0]
	for _, m := range w.Members {
		s.Members = append(s.Members, Member{Seat: m.Seat, Username: m.Username, Online: m.Online})
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Seat < s.Members[j].Seat })
	r.snapshotsOn = w.SnapshotSeat >= 0
	r.resumeToken = w.ResumeToken
	r.updateProviderLocked()
	r.mu.Unlock()
	r.clock.welcome(r.cfg.Now(), w.ServerTimeMS)
	r.stats.connects.Add(1)
}

// updateProviderLocked recomputes whether this client sends snapshots.
func (r *Room) updateProviderLocked() {
	s := &r.state
	r.provider.Store(r.snapInterval > 0 && s.SnapshotSeat >= 0 && uint8(s.SnapshotSeat) == s.Seat)
}

// run is the supervisor goroutine: it serves each connection, and reconnects
// after a disconnect until the room ends.
func (r *Room) run(c conn) {
	defer r.finish()
	for {
		cause := r.serve(c)
		r.mu.Lock()
		leaving := r.leaving
		r.mu.Unlock()
		if r.ctx.Err() != nil || leaving {
			r.end(ErrClosed)
			return
		}
		if isTerminal(cause) {
			r.end(cause)
			return
		}
		r.stats.disconnects.Add(1)
		r.log.Info("rooms: disconnected", "err", cause)
		r.emit(Event{Kind: EventDisconnected, Err: cause})
		next, rejoined, err := r.reconnect(cause)
		if err != nil {
			if r.ctx.Err() != nil {
				err = ErrClosed
			}
			r.end(err)
			return
		}
		r.log.Info("rooms: reconnected", "rejoined", rejoined)
		r.emit(Event{Kind: EventResumed, Rejoined: rejoined})
		c = next
	}
}

// finish announces the end and closes the channels. The reader has exited.
func (r *Room) finish() {
	r.mu.Lock()
	r.conn = nil
	err := r.err
	r.mu.Unlock()
	ev := Event{Kind: EventClosed, Err: err}
	var ne *NodeError
	if errors.As(err, &ne) {
		ev.Reason, ev.Result = ne.Reason, ne.Result
	}
	if r.ctx.Err() != nil {
		select { // closed by the client: nobody may be reading
		case r.events <- ev:
		default:
		}
	} else {
		r.emit(ev)
	}
	r.log.Debug("rooms: room ended", "err", err)
	r.cancel()
	close(r.frames)
	close(r.events)
	close(r.finished)
}

// serve runs one connection: it starts its reader and writer, sends PING
// every Heartbeat, and kills the connection after SilenceTimeout without a
// message. It returns the cause once reader and writer have exited.
func (r *Room) serve(c conn) error {
	c.start(func(msg []byte) error { return r.handle(c, msg) })
	t := time.NewTicker(r.cfg.Heartbeat)
	r.ping(c)
loop:
	for {
		select {
		case <-t.C:
			silent := r.cfg.Now().Sub(time.Unix(0, c.lastRecv()))
			if silent >= r.cfg.SilenceTimeout && !r.delivering.Load() {
				c.kill(ErrSilence)
				continue
			}
			r.ping(c)
		case <-c.done():
			break loop
		case <-r.ctx.Done():
			c.kill(ErrClosed)
		}
	}
	t.Stop()
	c.wait()
	r.setConn(nil)
	return c.cause()
}

// setConn makes c the connection the send methods use.
func (r *Room) setConn(c conn) {
	r.mu.Lock()
	r.conn = c
	if c != nil {
		r.transport = c.transport()
	}
	r.mu.Unlock()
}

// ping sends PING(client_ms = now, rtt_ms = the RTT median).
func (r *Room) ping(c conn) {
	rtt := r.clock.rtt().Milliseconds()
	_ = c.sendPing(uint64(r.cfg.Now().UnixMilli()), uint32(min(rtt, 1<<32-1)))
}

// reconnect implements "断线恢复": RESUME with the newest resume token, with
// the Backoff schedule, until the reconnect window is over; after ERROR 11
// or a connect-ticket error, C1 with the same client_session_id and HELLO,
// then FRAME_REQ up to the new WELCOME's frame. It returns the new
// connection and whether it came from a re-join.
func (r *Room) reconnect(cause error) (conn, bool, error) {
	r.mu.Lock()
	window, haveToken := r.window, len(r.resumeToken) > 0
	r.mu.Unlock()
	deadline := r.cfg.Now().Add(window)
	rejoin := needsRejoin(cause) || !haveToken
	ticketFailures := 0
	last := cause
	for attempt := 0; ; attempt++ {
		wait := r.cfg.Backoff(attempt)
		if r.cfg.Now().Add(wait).After(deadline) {
			return nil, false, fmt.Errorf("%w after %d attempts: %w", ErrReconnectWindowExpired, attempt, last)
		}
		if !sleep(r.ctx, wait) {
			return nil, false, ErrClosed
		}
		r.stats.attempts.Add(1)
		if !rejoin {
			c, w, err := r.resume(r.ctx)
			if err == nil {
				r.welcome(w)
				r.stats.resumes.Add(1)
				r.setConn(c)
				return c, false, nil
			}
			last = err
			switch {
			case r.ctx.Err() != nil:
				return nil, false, ErrClosed
			case isTerminal(err):
				return nil, false, err
			case !needsRejoin(err):
				continue // the node is unreachable: back off
			}
			r.log.Info("rooms: resume rejected, joining again", "err", err)
			rejoin = true
		}
		jr, err := r.client.Join(r.ctx, r.roomID, JoinOptions{Ticket: r.ticket, ClientSessionID: r.csid})
		if err != nil {
			last = err
			var ae *APIError
			if r.ctx.Err() != nil {
				return nil, false, ErrClosed
			}
			if errors.As(err, &ae) && !ae.Temporary() {
				return nil, false, err // the seat is gone
			}
			continue
		}
		c, w, err := r.hello(r.ctx, jr)
		if err == nil {
			r.welcome(w)
			if req, ok := r.asm.CatchUp(w.Frame); ok {
				_ = c.sendFrameReq(req) // the queue is empty: cannot fail
				r.stats.frameReqs.Add(1)
			}
			r.stats.rejoins.Add(1)
			r.setConn(c)
			return c, true, nil
		}
		last = err
		switch {
		case r.ctx.Err() != nil:
			return nil, false, ErrClosed
		case errors.Is(err, ErrUnsupportedVersion), errors.Is(err, ErrUDPUnavailable), isTerminal(err):
			return nil, false, err
		case needsRejoin(err):
			// "重新调 C1 取票后再握手一次;仍失败让业务重新签发加入票据"
			if ticketFailures++; ticketFailures >= 2 {
				return nil, false, err
			}
		}
	}
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// handle processes one message from the node. It returns an error that ends
// the connection: a node ERROR.
func (r *Room) handle(c conn, msg []byte) error {
	t, err := roomwire.Peek(msg)
	if err != nil {
		if !errors.Is(err, roomwire.ErrUnknownType) { // unknown types are ignored
			r.stats.invalid.Add(1)
		}
		return nil
	}
	switch t {
	case roomwire.TypeFrame:
		if r.frameMsg.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.pushFrames(c, r.frameMsg.Frames)
	case roomwire.TypeFrameBatch:
		if r.batchMsg.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.pushFrames(c, r.batchMsg.Frames)
		if cap(r.batchMsg.Frames) > 16 { // a full batch: do not keep 300 frames' slices
			r.batchMsg.Frames = nil
		}
	case roomwire.TypeSnapshot:
		var m roomwire.Snapshot
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.lastFrame.Store(m.Frame)
		r.stats.restores.Add(1)
		r.pushFrame(Frame{Number: m.Frame, Restore: true, Snapshot: append([]byte{}, m.Data...)})
		r.asm.Snapshot(m.Frame, r.deliverFn)
		r.emit(Event{Kind: EventSnapshot, Frame: m.Frame})
	case roomwire.TypePong:
		var m roomwire.Pong
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.clock.pong(r.cfg.Now(), m.ClientMS, m.ServerMS)
	case roomwire.TypeCustom:
		var m roomwire.Custom
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.emit(Event{Kind: EventCustom, Seat: m.From, To: m.To, Reliable: m.Reliable, Data: append([]byte{}, m.Data...)})
	case roomwire.TypeMember:
		var m roomwire.Member
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.member(&m)
		r.emit(Event{Kind: EventMember, Seat: m.Seat, Username: m.Username, MemberKind: m.Kind, Reason: m.Reason})
	case roomwire.TypeRoomState:
		var m roomwire.RoomState
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		r.mu.Lock()
		r.state.RoomState = m.State
		if m.StartFrame != 0 {
			r.state.StartFrame = m.StartFrame
		}
		r.mu.Unlock()
		ev := Event{Kind: EventRoomState, State: m.State, StartFrame: m.StartFrame, Reason: m.Reason}
		if len(m.Result) > 0 {
			ev.Result = append([]byte(nil), m.Result...)
		}
		r.emit(ev)
	case roomwire.TypeError:
		var m roomwire.Error
		if m.Unmarshal(msg) != nil {
			r.stats.invalid.Add(1)
			return nil
		}
		return newNodeError(&m)
	}
	return nil // WELCOME after the handshake, client-bound types: ignored
}

// pushFrames hands FRAME or FRAME_BATCH frames to the assembler and sends
// the FRAME_REQ it asks for.
func (r *Room) pushFrames(c conn, frames []roomwire.TickFrame) {
	if req, ok := r.asm.Push(frames, r.deliverFn); ok {
		if c.sendFrameReq(req) == nil {
			r.stats.frameReqs.Add(1)
		}
	}
}

// deliverFrame copies an in-order frame from the assembler onto Frames.
func (r *Room) deliverFrame(tf roomwire.TickFrame) {
	f := Frame{Number: tf.Number}
	if n := len(tf.Inputs); n > 0 {
		size := 0
		for i := range tf.Inputs {
			size += len(tf.Inputs[i].Data)
		}
		data := make([]byte, size)
		f.Inputs = make([]Input, n)
		off := 0
		for i := range tf.Inputs {
			end := off + copy(data[off:], tf.Inputs[i].Data)
			f.Inputs[i] = Input{Seat: tf.Inputs[i].Seat, Data: data[off:end:end]}
			off = end
		}
	}
	f.SnapshotDue = r.snapInterval > 0 && tf.Number%r.snapInterval == 0 && r.provider.Load()
	r.lastFrame.Store(tf.Number) // first, so a game that has frame n sees LastFrame() ≥ n
	r.stats.frames.Add(1)
	r.pushFrame(f)
	if f.SnapshotDue && r.cfg.SnapshotFunc != nil {
		if data := r.cfg.SnapshotFunc(tf.Number); len(data) > 0 {
			if err := r.PutSnapshot(tf.Number, data); err != nil {
				r.log.Debug("rooms: snapshot not sent", "frame", tf.Number, "err", err)
			}
		}
	}
}

// member applies a MEMBER to the state. When snapshots are on, the snapshot
// seat follows the node's rule: the lowest online seat (rooms spec §6).
func (r *Room) member(m *roomwire.Member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.state
	i := sort.Search(len(s.Members), func(i int) bool { return s.Members[i].Seat >= m.Seat })
	found := i < len(s.Members) && s.Members[i].Seat == m.Seat
	switch m.Kind {
	case roomwire.MemberLeft:
		if found {
			s.Members = append(s.Members[:i], s.Members[i+1:]...)
		}
	case roomwire.MemberOnline, roomwire.MemberOffline:
		mm := Member{Seat: m.Seat, Username: m.Username, Online: m.Kind == roomwire.MemberOnline}
		if found {
			s.Members[i] = mm
		} else {
			s.Members = append(s.Members, Member{})
			copy(s.Members[i+1:], s.Members[i:])
			s.Members[i] = mm
		}
	}
	if r.snapshotsOn {
		seat := int(s.Seat) // this client is online
		for _, mm := range s.Members {
			if mm.Online && int(mm.Seat) < seat {
				seat = int(mm.Seat)
				break
			}
		}
		s.SnapshotSeat = int8(seat)
		r.updateProviderLocked()
	}
}
