package p2p

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// freePort returns a TCP port on 127.0.0.1 free right now.
func freePort(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// TestSimultaneousOpenAndFraming connects two sockets that both only
// connect (no listener: a TCP simultaneous open, or one SYN meeting the
// other side's connecting socket), then checks the sealed framing both
// ways, and that a frame sealed with another key ends the path.
func TestSimultaneousOpenAndFraming(t *testing.T) {
	a, b := freePort(t), freePort(t)
	var secret [32]byte
	secret[0] = 7
	sa, err := p2pseal.PairSide(secret[:], 99, "alice~1", "bob~2")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p2pseal.PairSide(secret[:], 99, "bob~2", "alice~1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var ca, cb net.Conn
	var ea, eb error
	var wg sync.WaitGroup
	wg.Go(func() { ca, ea = dialSimultaneous(ctx, a, b) })
	wg.Go(func() { cb, eb = dialSimultaneous(ctx, b, a) })
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatalf("simultaneous open: %v, %v", ea, eb)
	}
	ta := &tcpPath{conn: ca, remote: b, side: sa, cfgWT: time.Second}
	tb := &tcpPath{conn: cb, remote: a, side: sb, cfgWT: time.Second}
	defer ta.close()
	defer tb.close()
	if ca.LocalAddr().(*net.TCPAddr).AddrPort() != a || ca.RemoteAddr().(*net.TCPAddr).AddrPort() != b {
		t.Fatalf("a's connection is %v → %v, want %v → %v", ca.LocalAddr(), ca.RemoteAddr(), a, b)
	}

	probe, _ := (&p2pwire.PunchProbe{PunchID: 5, Target: b}).AppendTo(nil)
	big := append([]byte{byte(p2pwire.KindUDPMessage), 0, 0}, bytes.Repeat([]byte{0xAB}, 60_000)...)
	for _, m := range [][]byte{probe, big, probe} {
		if err := ta.write(m); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(cb)
	var frame []byte
	for i, want := range [][]byte{probe, big, probe} {
		var got []byte
		frame, got, err = tb.read(br, frame, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(got), err)
		}
	}
	if err := ta.write(make([]byte, 70_000)); err == nil {
		t.Fatal("a frame over the sealed maximum was written")
	}

	// b's side under another secret: a's frames no longer open.
	secret[0] = 8
	other, _ := p2pseal.PairSide(secret[:], 99, "bob~2", "alice~1")
	tb.side = other
	if err := ta.write(probe); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.read(br, frame, nil); err == nil {
		t.Fatal("a frame sealed under another key opened")
	}
}

// TestTCPFramingAllocatesNothing: sealing and writing a frame, and
// reading and opening one, allocate nothing once the buffers have grown.
func TestTCPFramingAllocatesNothing(t *testing.T) {
	var secret [32]byte
	sa, _ := p2pseal.PairSide(secret[:], 7, "a~1", "b~2")
	sb, _ := p2pseal.PairSide(secret[:], 7, "b~2", "a~1")
	plain := append([]byte{byte(p2pwire.KindUDPMessage), 0, 0}, bytes.Repeat([]byte{1}, 1000)...)
	var sink bytes.Buffer
	tw := &tcpPath{conn: nopConn{&sink}, side: sa, cfgWT: time.Second}
	_ = tw.write(plain)
	if n := testing.AllocsPerRun(100, func() { sink.Reset(); _ = tw.write(plain) }); n != 0 {
		t.Errorf("writing a frame allocates %v times", n)
	}

	const frames = 102 // AllocsPerRun's warm-up run, and 100 more, and one before
	sink.Reset()
	for range frames {
		if err := tw.write(plain); err != nil {
			t.Fatal(err)
		}
	}
	tr := &tcpPath{side: sb}
	br := bufio.NewReaderSize(bytes.NewReader(sink.Bytes()), 64<<10)
	frame := make([]byte, 0, 2048)
	buf := make([]byte, 0, 2048)
	var err error
	if frame, _, err = tr.read(br, frame, buf); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		var got []byte
		if frame, got, err = tr.read(br, frame, buf); err != nil || len(got) != len(plain) {
			t.Fatalf("read: %d bytes, %v", len(got), err)
		}
	})
	if n != 0 {
		t.Errorf("reading a frame allocates %v times", n)
	}
}

// nopConn is a net.Conn that writes to a buffer.
type nopConn struct{ w *bytes.Buffer }

func (c nopConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (c nopConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c nopConn) Close() error                     { return nil }
func (c nopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c nopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c nopConn) SetDeadline(time.Time) error      { return nil }
func (c nopConn) SetReadDeadline(time.Time) error  { return nil }
func (c nopConn) SetWriteDeadline(time.Time) error { return nil }
