package rooms_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a manual clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// testHeader is a 2-byte stand-in for a transport header: 0xEE, low byte of
// the payload length.
func testHeader(h []byte, n int) int {
	h[len(h)-2], h[len(h)-1] = 0xEE, byte(n)
	return 2
}

// peer records what a room sends it, decoded.
type peer struct {
	t      *testing.T
	mu     sync.Mutex
	msgs   []roomwire.Message
	full   bool // Send fails
	closed bool
	final  roomwire.Message
}

func (p *peer) decode(m *rooms.Msg) roomwire.Message {
	w, pl := m.Wire(), m.Payload()
	if len(w) != len(pl)+2 || w[0] != 0xEE || w[1] != byte(len(pl)) || !bytes.Equal(w[2:], pl) {
		p.t.Errorf("wire bytes % x do not frame payload % x", w, pl)
	}
	msg, err := roomwire.Decode(bytes.Clone(pl))
	if err != nil {
		p.t.Errorf("room sent undecodable %s: %v", m.Type(), err)
	}
	return msg
}

func (p *peer) Send(m *rooms.Msg) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full || p.closed {
		return false
	}
	p.msgs = append(p.msgs, p.decode(m))
	return true
}

func (p *peer) Close(final *rooms.Msg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if final != nil {
		p.final = p.decode(final)
	}
}

func (p *peer) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *peer) finalMsg() roomwire.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.final
}

// take returns the messages received since the last take.
func (p *peer) take() []roomwire.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.msgs
	p.msgs = nil
	return m
}

// only returns the messages of type T among ms.
func only[T roomwire.Message](ms []roomwire.Message) []T {
	var out []T
	for _, m := range ms {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func types(ms []roomwire.Message) []roomwire.Type {
	var out []roomwire.Type
	for _, m := range ms {
		out = append(out, m.Type())
	}
	return out
}

// recorder is an Observer.
type recorder struct {
	mu     sync.Mutex
	events []rooms.Event
}

func (o *recorder) RoomEvent(ev rooms.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, ev)
}

func (o *recorder) has(kind rooms.EventKind, seat int, reason string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.ContainsFunc(o.events, func(e rooms.Event) bool {
		return e.Kind == kind && e.Seat == seat && e.Reason == reason
	})
}

type harness struct {
	t   *testing.T
	clk *clock
	e   *rooms.Engine
	obs *recorder
}

func newHarness(t *testing.T, mod func(*rooms.Config)) *harness {
	t.Helper()
	h := &harness{
		t:   t,
		clk: &clock{t: time.Date(2026, 11, 10, 8, 0, 0, 0, time.UTC)},
		obs: &recorder{},
	}
	cfg := rooms.Config{
		Logger:     slog.New(slog.DiscardHandler),
		SealResume: sealResume,
		Header:     testHeader,
		Observer:   h.obs,
	}
	cfg.Now = h.clk.Now
	if mod != nil {
		mod(&cfg)
	}
	e, err := rooms.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	return h
}

// frameRoom is a 4-seat 30 Hz frame room starting automatically.
func frameRoom(id string) rooms.RoomConfig {
	return rooms.RoomConfig{ID: id, SyncMode: rooms.SyncFrame, TickRate: 30, MaxPlayers: 4, StartMode: rooms.StartAuto}
}

func (h *harness) open(rc rooms.RoomConfig) *rooms.Room {
	h.t.Helper()
	r, err := h.e.Open(rc)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func session(seat int) string { return fmt.Sprintf("sess-%d", seat) }

// join admits seat for session(seat) and connects a new peer; it returns
// the link, the peer and the WELCOME.
func (h *harness) join(r *rooms.Room, seat int) (*rooms.Link, *peer, *roomwire.Welcome) {
	h.t.Helper()
	if err := r.Admit(seat, fmt.Sprintf("user%d", seat), session(seat)); err != nil {
		h.t.Fatalf("admit %d: %v", seat, err)
	}
	p := &peer{t: h.t}
	l, err := r.Join(seat, session(seat), p)
	if err != nil {
		h.t.Fatalf("join %d: %v", seat, err)
	}
	ms := p.take()
	if len(ms) == 0 {
		h.t.Fatalf("join %d: no WELCOME", seat)
	}
	w, ok := ms[0].(*roomwire.Welcome)
	if !ok {
		h.t.Fatalf("join %d: first message %s, want WELCOME", seat, ms[0].Type())
	}
	p.msgs = ms[1:]
	return l, p, w
}

// sealResume is the tests' Config.SealResume: the key as JSON, which the
// engine must pass on as opaque bytes.
func sealResume(k rooms.ResumeKey) []byte {
	b, err := json.Marshal(k)
	if err != nil {
		panic(err)
	}
	return b
}

// resumeToken returns the key of a WELCOME's resume token.
func (h *harness) resumeToken(w *roomwire.Welcome) rooms.ResumeKey {
	h.t.Helper()
	var k rooms.ResumeKey
	if err := json.Unmarshal(w.ResumeToken, &k); err != nil {
		h.t.Fatalf("resume token %q: %v", w.ResumeToken, err)
	}
	return k
}

// tick advances the clock by one period of a 30 Hz room and ticks r.
func (h *harness) tick(r *rooms.Room) {
	h.t.Helper()
	r.Tick(h.clk.Add(time.Second / time.Duration(max(r.Config().TickRate, 10))))
}

// frameNumbers flattens the frame numbers of FRAME and FRAME_BATCH messages.
func frameNumbers(ms []roomwire.Message) []uint32 {
	var out []uint32
	for _, m := range ms {
		switch m := m.(type) {
		case *roomwire.Frame:
			for _, f := range m.Frames {
				out = append(out, f.Number)
			}
		case *roomwire.FrameBatch:
			for _, f := range m.Frames {
				out = append(out, f.Number)
			}
		}
	}
	return out
}

func seq(from, to uint32) []uint32 {
	var out []uint32
	for f := from; f <= to; f++ {
		out = append(out, f)
	}
	return out
}
