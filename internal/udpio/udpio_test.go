package udpio_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/udpio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func listen(t *testing.T, network, addr string) *net.UDPConn {
	t.Helper()
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP(network, ua)
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newConn(t *testing.T, uc *net.UDPConn, cfg udpio.Config) *udpio.Conn {
	t.Helper()
	c, err := udpio.New(uc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func messages(n, size int) []udpio.Message {
	ms := make([]udpio.Message, n)
	for i := range ms {
		ms[i].Buf = make([]byte, size)
	}
	return ms
}

// TestBatchRoundTrip: a batch written by one Conn is read back, in order,
// with its sender, by another; on IPv4, IPv6 and dual-stack sockets.
func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, network, addr, dial string }{
		{"ipv4", "udp4", "127.0.0.1:0", "127.0.0.1"},
		{"ipv6", "udp6", "[::1]:0", "::1"},
		{"dual stack to ipv4", "udp", ":0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := listen(t, tc.network, tc.addr), listen(t, tc.network, tc.addr)
			ca, cb := newConn(t, a, udpio.Config{Batch: 8}), newConn(t, b, udpio.Config{Batch: 8})
			to := netip.AddrPortFrom(netip.MustParseAddr(tc.dial), b.LocalAddr().(*net.UDPAddr).AddrPort().Port())
			out := make([]udpio.Message, 20)
			for i := range out {
				out[i] = udpio.Message{Buf: []byte(fmt.Sprintf("datagram %d", i)), Addr: to}
			}
			if n, err := ca.WriteBatch(out); err != nil || n != len(out) {
				t.Fatalf("wrote %d, %v", n, err)
			}
			in := messages(8, 1500)
			got := 0
			_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
			for got < len(out) {
				n, err := cb.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range in[:n] {
					if want := out[got].Buf; !bytes.Equal(m.Buf[:m.N], want) {
						t.Fatalf("got %q, want %q", m.Buf[:m.N], want)
					}
					if m.Addr.Port() != a.LocalAddr().(*net.UDPAddr).AddrPort().Port() || m.Addr.Addr().Unmap() != to.Addr().Unmap() {
						t.Fatalf("sender %v", m.Addr)
					}
					got++
				}
			}
		})
	}
}

// TestTruncatedAndClosed: a datagram longer than the buffer is cut to it;
// closing the socket ends a blocked ReadBatch with net.ErrClosed.
func TestTruncatedAndClosed(t *testing.T) {
	a, b := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	cb := newConn(t, b, udpio.Config{})
	if _, err := a.WriteToUDPAddrPort(make([]byte, 100), b.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	in := messages(4, 10)
	n, err := cb.ReadBatch(in)
	if err != nil || n != 1 || in[0].N != 10 {
		t.Fatalf("read %d (%d bytes), %v", n, in[0].N, err)
	}
	done := make(chan error)
	go func() { _, err := cb.ReadBatch(in); done <- err }()
	time.Sleep(10 * time.Millisecond)
	b.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("got %v, want net.ErrClosed", err)
	}
}

// TestUnreachableSkipped: a datagram the kernel refuses does not stop the
// rest of the batch.
func TestUnreachableSkipped(t *testing.T) {
	a, b := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	ca, cb := newConn(t, a, udpio.Config{}), newConn(t, b, udpio.Config{})
	to := b.LocalAddr().(*net.UDPAddr).AddrPort()
	out := []udpio.Message{
		{Buf: []byte("one"), Addr: to},
		{Buf: []byte("v6 on a v4 socket"), Addr: netip.MustParseAddrPort("[2001:db8::1]:9")},
		{Buf: []byte("two"), Addr: to},
	}
	if n, err := ca.WriteBatch(out); err != nil || n != 3 {
		t.Fatalf("wrote %d, %v", n, err)
	}
	in := messages(4, 100)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []string
	for len(got) < 2 {
		n, err := cb.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in[:n] {
			got = append(got, string(m.Buf[:m.N]))
		}
	}
	if got[0] != "one" || got[1] != "two" {
		t.Fatalf("got %q", got)
	}
}

// TestNoAllocations: a batch read and a batch write allocate nothing.
func TestNoAllocations(t *testing.T) {
	a, b := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
	ca, cb := newConn(t, a, udpio.Config{Batch: 16}), newConn(t, b, udpio.Config{Batch: 16})
	to := b.LocalAddr().(*net.UDPAddr).AddrPort()
	out := make([]udpio.Message, 16)
	for i := range out {
		out[i] = udpio.Message{Buf: make([]byte, 64), Addr: to}
	}
	in := messages(16, 1500)
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	n := testing.AllocsPerRun(100, func() {
		if _, err := ca.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(out); {
			n, err := cb.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if n != 0 {
		t.Fatalf("got %v allocations per batch round trip, want 0", n)
	}
	if r, w := cb.Buffers(); r == 0 || w == 0 {
		t.Fatalf("buffers %d, %d", r, w)
	}
}

func TestConfig(t *testing.T) {
	uc := listen(t, "udp4", "127.0.0.1:0")
	if _, err := udpio.New(uc, udpio.Config{Batch: udpio.MaxBatch + 1}); !errors.Is(err, udpio.ErrConfig) {
		t.Fatalf("got %v", err)
	}
	if c := newConn(t, uc, udpio.Config{}); c.Batch() != udpio.DefaultBatch {
		t.Fatalf("batch %d", c.Batch())
	}
}

// TestSegmentationOffload: runs of equal datagrams to one destination (sent
// segmented where the kernel can) arrive as the datagrams they were, in
// order, interleaved with other sizes and destinations; with and without
// offload.
func TestSegmentationOffload(t *testing.T) {
	for _, noGSO := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoGSO=%v", noGSO), func(t *testing.T) {
			a, b, c := listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0"), listen(t, "udp4", "127.0.0.1:0")
			ca := newConn(t, a, udpio.Config{Batch: 128, NoGSO: noGSO})
			toB, toC := b.LocalAddr().(*net.UDPAddr).AddrPort(), c.LocalAddr().(*net.UDPAddr).AddrPort()
			var out []udpio.Message
			wantB, wantC := []string{}, []string{}
			add := func(to netip.AddrPort, size int, want *[]string) {
				p := make([]byte, size)
				copy(p, fmt.Sprintf("%d:%d", len(out), size))
				out = append(out, udpio.Message{Buf: p, Addr: to})
				*want = append(*want, string(p))
			}
			for range 70 { // over maxGSOSegments
				add(toB, 1200, &wantB)
			}
			add(toB, 100, &wantB)
			for range 5 {
				add(toC, 500, &wantC)
				add(toB, 500, &wantB)
			}
			for range 60 { // 60 × 1,200 bytes: over one run's bytes
				add(toC, 1200, &wantC)
			}
			if n, err := ca.WriteBatch(out); err != nil || n != len(out) {
				t.Fatalf("wrote %d of %d, %v", n, len(out), err)
			}
			if runtime.GOOS == "linux" && !noGSO && !ca.GSO() {
				t.Log("the kernel refused segmentation offload; tested the fallback")
			}
			for _, rc := range []struct {
				c    *net.UDPConn
				want []string
			}{{b, wantB}, {c, wantC}} {
				_ = rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 65536)
				for i, w := range rc.want {
					n, err := rc.c.Read(buf)
					if err != nil {
						t.Fatalf("datagram %d: %v", i, err)
					}
					if string(buf[:n]) != w {
						t.Fatalf("datagram %d: got %d bytes %q…, want %d bytes %q…", i, n, buf[:8], len(w), w[:8])
					}
				}
			}
		})
	}
}
