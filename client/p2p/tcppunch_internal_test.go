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
