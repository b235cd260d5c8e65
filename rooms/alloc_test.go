package rooms_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

// writerPeer stands in for a connection whose writer goroutine has written
// the message at once: it retains and releases it.
type writerPeer struct{ bytes int }

func (p *writerPeer) Send(m *rooms.Msg) bool {
	m.Retain()
	p.bytes += len(m.Wire())
	m.Release()
	return true
}

func (p *writerPeer) Close(*rooms.Msg) {}

// playing4 returns a started 4-player 30 Hz room with a link per seat.
func playing4(tb testing.TB, now func() time.Time) (*rooms.Room, []*rooms.Link) {
	tb.Helper()
	e, err := rooms.New(rooms.Config{Now: now, Logger: slog.New(slog.DiscardHandler), Header: testHeader})
	if err != nil {
		tb.Fatal(err)
	}
	rc := frameRoom("bench")
	rc.MaxDuration = 1 << 62 // ~146 years of fake clock
	r, err := e.Open(rc)
	if err != nil {
		tb.Fatal(err)
	}
	links := make([]*rooms.Link, 4)
	for i := range links {
		if err := r.Admit(i, "user", session(i)); err != nil {
			tb.Fatal(err)
		}
		if links[i], err = r.Join(i, session(i), &writerPeer{}); err != nil {
			tb.Fatal(err)
		}
	}
	if r.State() != rooms.StatePlaying {
		tb.Fatal("room did not start")
	}
	return r, links
}

// TestTickAllocs: a tick of a playing room — four INPUTs, one frame into
// the retention ring, one FRAME to four peers — allocates nothing in steady
// state.
func TestTickAllocs(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	r, links := playing4(t, clk.Now)
	input := []byte("0123456789abcdef")
	step := func() {
		now := clk.Add(time.Second / 30)
		for _, l := range links {
			l.Input(input)
		}
		r.Tick(now)
	}
	for range 3000 { // fill the 60 s retention ring
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("tick with 4 inputs: %v allocs, want 0", a)
	}
	relay := func() { // at the CUSTOM rate: every message goes out
		clk.Add(time.Second / rooms.DefaultCustomRate)
		links[0].Custom(0, true, input)
	}
	if a := testing.AllocsPerRun(1000, relay); a != 0 {
		t.Errorf("CUSTOM to 3 seats: %v allocs, want 0", a)
	}
}

// BenchmarkTick measures one tick of a playing 4-player room with four
// 16-byte INPUTs, frame encoding and the FRAME handed to four peers.
func BenchmarkTick(b *testing.B) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	r, links := playing4(b, clk.Now)
	input := []byte("0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		now := clk.Add(time.Second / 30)
		for _, l := range links {
			l.Input(input)
		}
		if !r.Tick(now) {
			b.Fatal("room closed")
		}
	}
}

// BenchmarkTickOnly is BenchmarkTick without the INPUT calls.
func BenchmarkTickOnly(b *testing.B) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	r, _ := playing4(b, clk.Now)
	b.ReportAllocs()
	for b.Loop() {
		if !r.Tick(clk.Add(time.Second / 30)) {
			b.Fatal("room closed")
		}
	}
}
