package netwire

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireTUN skips t when a link cannot be built here (not root, no ip,
// no /dev/net/tun) outside CI, and fails it with the reason inside CI (the
// CI environment variable set, as .ci/run does), as internal/natlab does.
func requireTUN(t *testing.T) {
	t.Helper()
	reason := ""
	switch {
	case os.Geteuid() != 0:
		reason = "not running as root"
	case func() bool { _, err := exec.LookPath("ip"); return err != nil }():
		reason = "ip (iproute2) is not installed"
	case func() bool { _, err := os.Stat("/dev/net/tun"); return err != nil }():
		reason = "no /dev/net/tun"
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("netwire: %s (CI must run the TUN tests: run as root; scripts/test installs iproute2)", reason)
	}
	t.Skipf("netwire: %s; the TUN tests need root, iproute2 and /dev/net/tun", reason)
}

// The link's addresses: a, in namespace A, reaches b, in namespace B,
// only through the wire.
var (
	addrA = net.IPv4(10, 231, 99, 1)
	addrB = net.IPv4(10, 231, 99, 2)
)

// tunLink is two network namespaces of this test joined by a wire.
type tunLink struct {
	A, B string // namespace names
	w    *Wire
}

func newTUNLink(t *testing.T, cfg Config) *tunLink {
	t.Helper()
	requireTUN(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	prefix := "nw" + hex.EncodeToString(rnd[:])
	l := &tunLink{A: prefix + "-a", B: prefix + "-b"}
	for _, ns := range []string{l.A, l.B} {
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		mustRun(t, "ip", "netns", "add", ns)
		mustRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
		// No IPv6 on the link: its router and neighbour chatter would
		// pass through the wire and blur the counts.
		mustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	fa, err := OpenTUN("tw0", l.A)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := OpenTUN("tw0", l.B)
	if err != nil {
		fa.Close()
		t.Fatal(err)
	}
	for _, s := range []struct {
		ns   string
		addr net.IP
	}{{l.A, addrA}, {l.B, addrB}} {
		mustRun(t, "ip", "-n", s.ns, "addr", "add", s.addr.String()+"/30", "dev", "tw0")
		mustRun(t, "ip", "-n", s.ns, "link", "set", "tw0", "mtu", "1500", "up")
	}
	if l.w, err = New(cfg); err != nil {
		fa.Close()
		fb.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- l.w.Serve(fa, fb) }()
	t.Cleanup(func() {
		if err := l.w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return l
}

func mustRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// in runs fn with sockets it opens belonging to namespace ns.
func (l *tunLink) in(t *testing.T, ns string, fn func() error) {
	t.Helper()
	if err := inNetns(ns, fn); err != nil {
		t.Fatal(err)
	}
}

// udpPair returns a socket in B on addrB and one in A connected to it.
func (l *tunLink) udpPair(t *testing.T) (a, b *net.UDPConn) {
	t.Helper()
	l.in(t, l.B, func() (err error) {
		b, err = net.ListenUDP("udp4", &net.UDPAddr{IP: addrB})
		return err
	})
	t.Cleanup(func() { b.Close() })
	forceReadBuffer(t, b, 8<<20)
	l.in(t, l.A, func() (err error) {
		a, err = net.DialUDP("udp4", nil, b.LocalAddr().(*net.UDPAddr))
		return err
	})
	t.Cleanup(func() { a.Close() })
	return a, b
}

// forceReadBuffer gives c a receive buffer of n bytes past net.core.rmem_max
// (SO_RCVBUFFORCE; these tests run as root): the tests count what the wire
// forwarded against what arrived, so the receiving socket must not drop
// datagrams of its own when the race detector or a busy machine slows its
// reader (a CI run lost 103 of 2,703 so).
func forceReadBuffer(t *testing.T, c *net.UDPConn, n int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	}); err != nil || serr != nil {
		t.Fatalf("receive buffer of %d bytes: %v", n, errors.Join(err, serr))
	}
}

// TestRoundTripTakesTwiceTheDelay: a UDP echo and a TCP connection and
// echo through the wire each take at least the configured round trip.
// A lower bound, which no load on the machine can break.
func TestRoundTripTakesTwiceTheDelay(t *testing.T) {
	const delay = 25 * time.Millisecond
	const rtt = 2 * delay
	l := newTUNLink(t, Both(Faults{Delay: delay}))

	t.Run("udp", func(t *testing.T) {
		a, b := l.udpPair(t)
		var wg sync.WaitGroup
		t.Cleanup(wg.Wait)
		wg.Go(func() {
			buf := make([]byte, 1500)
			for {
				n, from, err := b.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				b.WriteToUDPAddrPort(buf[:n], from)
			}
		})
		t.Cleanup(func() { b.Close() })
		buf := make([]byte, 1500)
		for i := range 5 {
			msg := fmt.Appendf(nil, "ping %d", i)
			start := time.Now()
			if _, err := a.Write(msg); err != nil {
				t.Fatal(err)
			}
			a.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := a.Read(buf)
			if err != nil {
				t.Fatalf("ping %d: %v", i, err)
			}
			if got := time.Since(start); got < rtt {
				t.Errorf("ping %d: round trip %v, want at least %v", i, got, rtt)
			}
			if !bytes.Equal(buf[:n], msg) {
				t.Errorf("ping %d: got %q, want %q", i, buf[:n], msg)
			}
		}
	})

	t.Run("tcp", func(t *testing.T) {
		var ln net.Listener
		l.in(t, l.B, func() (err error) {
			ln, err = net.Listen("tcp4", addrB.String()+":0")
			return err
		})
		var wg sync.WaitGroup
		t.Cleanup(func() { ln.Close(); wg.Wait() })
		wg.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadBytes('\n')
				if err != nil {
					return
				}
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		})
		var c net.Conn
		start := time.Now()
		l.in(t, l.A, func() (err error) {
			c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
			return err
		})
		defer c.Close()
		if got := time.Since(start); got < rtt {
			t.Errorf("TCP handshake took %v, want at least one round trip %v", got, rtt)
		}
		r := bufio.NewReader(c)
		for i := range 3 {
			// 4 kB: three segments each way at MTU 1500.
			msg := append(bytes.Repeat([]byte{'a' + byte(i)}, 4000), '\n')
			start := time.Now()
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("echo %d: %v", i, err)
			}
			if d := time.Since(start); d < rtt {
				t.Errorf("echo %d: round trip %v, want at least %v", i, d, rtt)
			}
			if !bytes.Equal(got, msg) {
				t.Errorf("echo %d: got %d bytes, want the %d sent", i, len(got), len(msg))
			}
		}
	})
}

// send writes n numbered datagrams from a to b, pausing every burst so that
// b's socket buffer keeps up, and returns the numbers b received, in
// arrival order, once nothing has arrived for quiet.
func send(t *testing.T, a, b *net.UDPConn, n, burst int, pause, quiet time.Duration) []uint32 {
	t.Helper()
	got := make(chan []uint32, 1)
	go func() {
		var seqs []uint32
		buf := make([]byte, 1500)
		for {
			b.SetReadDeadline(time.Now().Add(quiet))
			k, err := b.Read(buf)
			if err != nil {
				got <- seqs
				return
			}
			if k >= 4 {
				seqs = append(seqs, binary.BigEndian.Uint32(buf))
			}
		}
	}()
	msg := make([]byte, 64)
	write := a.Write // a dialled b
	if a.RemoteAddr() == nil {
		to := b.LocalAddr().(*net.UDPAddr)
		write = func(p []byte) (int, error) { return a.WriteToUDP(p, to) }
	}
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := write(msg); err != nil {
			t.Fatal(err)
		}
		if burst > 0 && (i+1)%burst == 0 {
			time.Sleep(pause)
		}
	}
	return <-got
}

// TestLossShare: with Loss 0.1 each way, about a tenth of 3,000 datagrams
// are lost, and every packet the wire read is accounted for.
func TestLossShare(t *testing.T) {
	const n, loss = 3000, 0.1
	l := newTUNLink(t, Config{AB: Faults{Loss: loss}, Seed: 7})
	a, b := l.udpPair(t)
	got := send(t, a, b, n, 100, 2*time.Millisecond, 500*time.Millisecond)
	// Binomial(3000, 0.1): mean 300, standard deviation 16.4; the bounds
	// are ±6 of them.
	lost := n - len(got)
	if lost < 200 || lost > 400 {
		t.Errorf("%d of %d datagrams lost, want about %v (200–400)", lost, n, loss*n)
	}
	st := l.w.Stats().AB
	if st.Received < n {
		t.Errorf("the wire read %d packets a→b, want at least the %d sent", st.Received, n)
	}
	if sum := st.Forwarded + st.Lost + st.Overflowed + st.Oversized + st.WriteErrors; sum != st.Received {
		t.Errorf("a→b %+v: forwarded+lost+overflowed+oversized+write errors = %d, want received %d", st, sum, st.Received)
	}
	if st.Lost != uint64(lost) {
		t.Errorf("wire counted %d lost, the receiver missed %d", st.Lost, lost)
	}

	// The other direction has no loss configured: all arrive.
	back := send(t, b, a, 1000, 100, 2*time.Millisecond, 500*time.Millisecond)
	if len(back) != 1000 {
		t.Errorf("%d of 1000 datagrams b→a arrived, want all (Loss is a→b only)", len(back))
	}
}

// TestQueueLimit: with a long delay and a limit of 8, a burst of 100
// datagrams leaves 8 and the rest are dropped and counted.
func TestQueueLimit(t *testing.T) {
	const n, limit = 100, 8
	l := newTUNLink(t, Config{AB: Faults{Delay: 300 * time.Millisecond}, Limit: limit})
	a, b := l.udpPair(t)
	got := send(t, a, b, n, 0, 0, time.Second)
	if len(got) != limit {
		t.Errorf("%d datagrams arrived, want the limit %d", len(got), limit)
	}
	st := waitStats(t, l.w, "100 received, 8 forwarded", func(st Stats) bool {
		return st.AB.Received == n && st.AB.Forwarded == limit
	})
	if st.AB.Overflowed != n-limit {
		t.Errorf("%d overflowed, want %d", st.AB.Overflowed, n-limit)
	}
}

// TestJitterOrder: jitter keeps each direction's order unless Reorder
// is set, which then reorders.
func TestJitterOrder(t *testing.T) {
	for _, reorder := range []bool{false, true} {
		t.Run(fmt.Sprintf("reorder=%v", reorder), func(t *testing.T) {
			const n = 300
			l := newTUNLink(t, Config{AB: Faults{Delay: time.Millisecond, Jitter: 30 * time.Millisecond, Reorder: reorder}, Seed: 3})
			a, b := l.udpPair(t)
			got := send(t, a, b, n, 10, time.Millisecond, 500*time.Millisecond)
			if len(got) != n {
				t.Fatalf("%d of %d datagrams arrived, want all", len(got), n)
			}
			inversions := 0
			for i := 1; i < len(got); i++ {
				if got[i] < got[i-1] {
					inversions++
				}
			}
			switch {
			case !reorder && inversions != 0:
				t.Errorf("%d datagrams overtook an earlier one, want none without Reorder", inversions)
			case reorder && inversions == 0:
				// 30 ms of jitter over datagrams about 0.1 ms apart: the
				// chance of no inversion among 300 is nil.
				t.Errorf("no datagram overtook another with Reorder and 30 ms of jitter")
			}
		})
	}
}
