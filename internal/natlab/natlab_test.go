package natlab_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboardgg/switchboard/internal/natlab"
)

const (
	rendezvousPort = 3478
	peerPort       = 40001
	probes         = 30
)

// rendezvous runs the check of nat-lab.md: both peers send to a UDP
// rendezvous on the hub, learn each other's public endpoint from it, then
// send probes straight to each other. It returns how many probes each side
// received direct, and the sockets (closed by the test).
func rendezvous(t *testing.T, l *natlab.Lab) (got [2]int, public [2]netip.AddrPort) {
	t.Helper()
	var hub *net.UDPConn
	if err := l.Do(l.Hub, func() (err error) {
		hub, err = net.ListenUDP("udp4", &net.UDPAddr{IP: natlab.HubAddr.AsSlice(), Port: rendezvousPort})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	var peers [2]*net.UDPConn
	for s := natlab.A; s <= natlab.B; s++ {
		if err := l.Do(l.Peer[s], func() (err error) {
			peers[s], err = net.ListenUDP("udp4", &net.UDPAddr{IP: natlab.PeerAddrOf(s).AsSlice(), Port: peerPort})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { peers[s].Close() })
	}
	hubAP := netip.AddrPortFrom(natlab.HubAddr, rendezvousPort)
	buf := make([]byte, 64)
	for s := natlab.A; s <= natlab.B; s++ {
		if _, err := peers[s].WriteToUDPAddrPort([]byte{byte(s)}, hubAP); err != nil {
			t.Fatal(err)
		}
		_ = hub.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := hub.ReadFromUDPAddrPort(buf)
		if err != nil || n != 1 || buf[0] != byte(s) {
			t.Fatalf("rendezvous: side %s: n=%d err=%v", s, n, err)
		}
		public[s] = from
	}
	var wg sync.WaitGroup
	for s := natlab.A; s <= natlab.B; s++ {
		other := public[1-s]
		wg.Go(func() {
			for range probes {
				_, _ = peers[s].WriteToUDPAddrPort([]byte("probe"), other)
				time.Sleep(10 * time.Millisecond)
			}
		})
		wg.Go(func() {
			b := make([]byte, 64)
			_ = peers[s].SetReadDeadline(time.Now().Add(probes*10*time.Millisecond + time.Second))
			for {
				_, from, err := peers[s].ReadFromUDPAddrPort(b)
				if err != nil {
					return
				}
				if from == other {
					got[s]++
				}
			}
		})
	}
	wg.Wait()
	return got, public
}

func TestEIMPunches(t *testing.T) {
	t.Parallel()
	l := natlab.New(t, natlab.EIM)
	got, public := rendezvous(t, l)
	for s := natlab.A; s <= natlab.B; s++ {
		if want := netip.AddrPortFrom(natlab.PublicAddrOf(s), peerPort); public[s] != want {
			t.Errorf("side %s: hub saw %v, want %v (a port-preserving NAT)", s, public[s], want)
		}
		// The first probes may meet the other NAT before its own peer has
		// opened the mapping; the rest pass.
		if got[s] < probes/2 {
			t.Errorf("side %s received %d of %d probes direct through EIM NATs", s, got[s], probes)
		}
	}
	t.Logf("received direct: a %d, b %d of %d", got[0], got[1], probes)
}

func TestSymmetricDoesNotPunch(t *testing.T) {
	t.Parallel()
	l := natlab.New(t, natlab.Symmetric)
	got, _ := rendezvous(t, l)
	if got[0] != 0 || got[1] != 0 {
		t.Errorf("received %v probes direct through symmetric NATs, want none", got)
	}
}

// dialSimultaneous connects from local to remote with the local port
// reusable, as both sides of a TCP simultaneous open do.
func dialSimultaneous(ctx context.Context, local, remote netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{
		LocalAddr: net.TCPAddrFromAddrPort(local),
		Timeout:   500 * time.Millisecond,
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = errors.Join(
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1),
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
			})
			return errors.Join(err, serr)
		},
	}
	return d.DialContext(ctx, "tcp4", remote.String())
}

func tcpPunch(t *testing.T, l *natlab.Lab, public [2]netip.AddrPort, attempts int) (ok [2]bool) {
	t.Helper()
	var wg sync.WaitGroup
	for s := natlab.A; s <= natlab.B; s++ {
		wg.Go(func() {
			local := netip.AddrPortFrom(natlab.PeerAddrOf(s), peerPort)
			for range attempts {
				var c net.Conn
				_ = l.Do(l.Peer[s], func() (err error) {
					c, err = dialSimultaneous(t.Context(), local, public[1-s])
					return err
				})
				if c == nil {
					continue
				}
				_, err := c.Write([]byte{'0' + byte(s)})
				b := make([]byte, 1)
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, rerr := c.Read(b)
				c.Close()
				ok[s] = err == nil && rerr == nil && b[0] == '1'-byte(s)
				return
			}
		})
	}
	wg.Wait()
	return ok
}

func TestTCPSimultaneousOpen(t *testing.T) {
	t.Parallel()
	for _, mode := range []natlab.Mode{natlab.EIM, natlab.Symmetric} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			l := natlab.New(t, mode)
			_, public := rendezvous(t, l)
			attempts := 10
			if mode == natlab.Symmetric {
				attempts = 4
			}
			ok := tcpPunch(t, l, public, attempts)
			want := mode == natlab.EIM
			if ok[0] != want || ok[1] != want {
				t.Errorf("%s NATs: TCP simultaneous open a=%v b=%v, want %v", mode, ok[0], ok[1], want)
			}
		})
	}
}

func TestHubCounterAndBlock(t *testing.T) {
	t.Parallel()
	l := natlab.New(t, natlab.EIM)
	before, _, err := l.HubCount()
	if err != nil {
		t.Fatal(err)
	}
	got, public := rendezvous(t, l)
	if got[0] == 0 || got[1] == 0 {
		t.Fatalf("no punch: %v", got)
	}
	after, _, err := l.HubCount()
	if err != nil {
		t.Fatal(err)
	}
	// Two rendezvous datagrams reached the hub; the probes did not.
	if d := after.Packets - before.Packets; d != 2 {
		t.Errorf("hub counted %d UDP packets, want the 2 rendezvous datagrams", d)
	}
	undo, err := l.Block(natlab.A, natlab.NATBAddr)
	if err != nil {
		t.Fatal(err)
	}
	// With the drop rule in natA, nothing from b's public address reaches a.
	if err := exchange(t, l, public); err == nil {
		t.Error("a direct datagram passed the drop rule")
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if err := exchange(t, l, public); err != nil {
		t.Errorf("after undo: %v", err)
	}
}

// exchange opens a fresh socket pair on another port behind both NATs
// and punches once more: both send to each other's public address; it
// fails when a receives nothing direct from b.
func exchange(t *testing.T, l *natlab.Lab, public [2]netip.AddrPort) error {
	t.Helper()
	var socks [2]*net.UDPConn
	const port = 40002
	for s := natlab.A; s <= natlab.B; s++ {
		if err := l.Do(l.Peer[s], func() (err error) {
			socks[s], err = net.ListenUDP("udp4", &net.UDPAddr{IP: natlab.PeerAddrOf(s).AsSlice(), Port: port})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer socks[s].Close()
	}
	toA := netip.AddrPortFrom(public[0].Addr(), port)
	toB := netip.AddrPortFrom(public[1].Addr(), port)
	buf := make([]byte, 16)
	for range 10 {
		_, _ = socks[0].WriteToUDPAddrPort([]byte("x"), toB)
		_, _ = socks[1].WriteToUDPAddrPort([]byte("y"), toA)
		_ = socks[0].SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, from, err := socks[0].ReadFromUDPAddrPort(buf); err == nil && n == 1 && from == toB {
			return nil
		}
	}
	return errors.New("a received nothing direct from b")
}
