package faultproxy_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/faultproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ioTimeout bounds every blocking read and write of the tests, so a bug
// fails a test instead of hanging it. No test expects to get near it.
const ioTimeout = 10 * time.Second

// startEcho serves an echo server on 127.0.0.1:0 until the test ends: each
// connection gets back what it sends, then a half-close after the client's.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				if _, err := io.Copy(c, c); err == nil {
					c.(*net.TCPConn).CloseWrite()
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// startProxy serves a proxy for cfg on 127.0.0.1:0 until the test ends,
// then checks that Close makes Serve return ErrServerClosed.
func startProxy(t *testing.T, cfg faultproxy.Config) (*faultproxy.Proxy, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := faultproxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, faultproxy.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	})
	return p, ln.Addr().String()
}

func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(ioTimeout))
	return c.(*net.TCPConn)
}

// roundTrip sends msg and reads it back from the echo behind the proxy.
func roundTrip(t *testing.T, c net.Conn, msg []byte) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
}

func TestPassThrough(t *testing.T) {
	tests := []struct {
		name   string
		faults faultproxy.Faults
		size   int
	}{
		{"no faults", faultproxy.Faults{}, 8 << 20},
		{"delay", faultproxy.Faults{DelayMin: 0, DelayMax: 2 * time.Millisecond}, 1 << 20},
		{"fixed delay", faultproxy.Faults{DelayMin: time.Millisecond, DelayMax: time.Millisecond}, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t), Seed: 1, Faults: tc.faults})
			c := dial(t, addr)
			payload := randomBytes(1, tc.size)

			var wg sync.WaitGroup
			var werr error
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(3, 4))
				for rest := payload; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(64<<10))
					if _, werr = c.Write(rest[:n]); werr != nil {
						return
					}
					rest = rest[n:]
				}
				werr = c.CloseWrite()
			})
			got, err := io.ReadAll(c)
			wg.Wait()
			if err != nil || werr != nil {
				t.Fatalf("read: %v, write: %v", err, werr)
			}
			if len(got) != len(payload) || sha256.Sum256(got) != sha256.Sum256(payload) {
				t.Fatalf("got %d bytes with sha256 %x, want %d bytes with %x",
					len(got), sha256.Sum256(got), len(payload), sha256.Sum256(payload))
			}
			st := p.Stats()
			if st.BytesUp != int64(tc.size) || st.BytesDown != int64(tc.size) {
				t.Errorf("Stats bytes: got up %d down %d, want %d each", st.BytesUp, st.BytesDown, tc.size)
			}
			if gotDelayed := st.Delayed > 0; gotDelayed != (tc.faults.DelayMax > 0) {
				t.Errorf("Stats.Delayed: got %d with DelayMax %v", st.Delayed, tc.faults.DelayMax)
			}
			if st.Connections != 1 || st.Severed != 0 || st.Stalled != 0 {
				t.Errorf("Stats: got %+v, want 1 connection, none severed or stalled", st)
			}
		})
	}
}

func TestSeverAll(t *testing.T) {
	p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t)})
	cs := []*net.TCPConn{dial(t, addr), dial(t, addr)}
	for _, c := range cs {
		roundTrip(t, c, []byte("hello"))
	}
	if n := p.SeverAll(); n != 2 {
		t.Fatalf("SeverAll: got %d, want 2", n)
	}
	for _, c := range cs {
		n, err := c.Read(make([]byte, 1))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after sever: got %d bytes, err %v, want EOF or reset", n, err)
		}
	}
	if st := p.Stats(); st.Severed != 2 {
		t.Errorf("Stats.Severed: got %d, want 2", st.Severed)
	}
	// The proxy still serves new connections.
	roundTrip(t, dial(t, addr), []byte("again"))
}

// TestBlackout: a blackout severs every connection and refuses new ones
// until it ends.
func TestBlackout(t *testing.T) {
	p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t)})
	c := dial(t, addr)
	roundTrip(t, c, []byte("hello"))
	if n := p.SetBlackout(true); n != 1 {
		t.Fatalf("SetBlackout(true): got %d severed, want 1", n)
	}
	for _, c := range []*net.TCPConn{c, dial(t, addr), dial(t, addr)} {
		n, err := c.Read(make([]byte, 1))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read during the blackout: got %d bytes, err %v, want EOF or reset", n, err)
		}
	}
	if st := p.Stats(); st.Severed != 1 || st.Refused != 2 || st.Connections != 1 || st.Rejected != 0 {
		t.Errorf("Stats: got %+v, want 1 connection severed and 2 refused", st)
	}
	if n := p.SetBlackout(false); n != 0 {
		t.Errorf("SetBlackout(false): got %d, want 0", n)
	}
	roundTrip(t, dial(t, addr), []byte("again"))
}

func TestStall(t *testing.T) {
	for _, dir := range []faultproxy.Direction{faultproxy.Up, faultproxy.Down, faultproxy.Both} {
		t.Run(map[faultproxy.Direction]string{faultproxy.Up: "up", faultproxy.Down: "down", faultproxy.Both: "both"}[dir], func(t *testing.T) {
			p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t)})
			c := dial(t, addr)
			roundTrip(t, c, []byte("before"))
			if n := p.StallAll(dir, time.Hour); n != 1 {
				t.Fatalf("StallAll: got %d, want 1", n)
			}
			msg := bytes.Repeat([]byte("stalled "), 1000)
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			// Nothing may come back while the stall lasts, however long we wait.
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read during stall: got %d bytes, err %v, want a deadline error", n, err)
			}
			p.ResumeAll()
			c.SetReadDeadline(time.Now().Add(ioTimeout))
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("data after stall differs from data sent")
			}
			roundTrip(t, c, []byte("after"))
			if st := p.Stats(); st.Stalled != 1 || st.Severed != 0 {
				t.Errorf("Stats: got %+v, want 1 stalled, 0 severed", st)
			}
		})
	}
}

func TestSetFaultsEnabled(t *testing.T) {
	// A sever rate this high cuts a connection at the first draw.
	p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t), Seed: 3,
		FaultInterval: 5 * time.Millisecond, Faults: faultproxy.Faults{SeverRate: 10000}})
	p.SetFaultsEnabled(false)
	c := dial(t, addr)
	for range 20 {
		roundTrip(t, c, []byte("calm"))
	}
	p.SetFaultsEnabled(true)
	if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with faults on: got %d bytes, err %v, want EOF or reset", n, err)
	}
	if st := p.Stats(); st.Severed != 1 {
		t.Errorf("Stats.Severed: got %d, want 1", st.Severed)
	}
	if err := p.SetFaults(faultproxy.Faults{}); err != nil {
		t.Fatal(err)
	}
	c = dial(t, addr)
	for range 20 {
		roundTrip(t, c, []byte("calm again"))
	}
}

// TestRandomFaults runs echo clients through random severs, stalls and
// delays and checks that every byte a client gets back is the next byte it
// sent on that connection.
func TestRandomFaults(t *testing.T) {
	p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t), Seed: 42, ChunkSize: 4 << 10,
		FaultInterval: 10 * time.Millisecond,
		Faults: faultproxy.Faults{SeverRate: 4, StallRate: 8, StallMin: 5 * time.Millisecond,
			StallMax: 50 * time.Millisecond, DelayMax: 2 * time.Millisecond}})
	const clients = 4
	var stop atomic.Bool
	var received, conns atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			for !stop.Load() {
				n, err := echoSession(addr, rng, 64<<10)
				received.Add(int64(n))
				conns.Add(1)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	start := time.Now()
	for {
		st := p.Stats()
		done := st.Severed > 0 && st.Stalled > 0 && time.Since(start) > time.Second
		if done || time.Since(start) > 3*time.Second || t.Failed() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	st := p.Stats()
	t.Logf("stats %+v; %d sessions, %d bytes checked", st, conns.Load(), received.Load())
	if st.Severed == 0 || st.Stalled == 0 || st.Delayed == 0 {
		t.Errorf("Stats: got %+v, want severs, stalls and delays", st)
	}
	if received.Load() == 0 {
		t.Error("no bytes came back")
	}
}

// echoSession sends up to size random bytes on one connection and checks
// what comes back. A cut connection ends the session without error; only
// wrong bytes (or an unreachable proxy) are errors. It returns the number
// of bytes checked.
func echoSession(addr string, rng *rand.Rand, size int) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	sent := randomBytes(rng.Uint64(), size)
	pieces := make([]int, 0, 64)
	for rest := size; rest > 0; {
		n := min(rest, 1+rng.IntN(8<<10))
		pieces = append(pieces, n)
		rest -= n
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		off := 0
		for _, n := range pieces {
			if _, err := c.Write(sent[off : off+n]); err != nil {
				return
			}
			off += n
		}
		c.(*net.TCPConn).CloseWrite()
	})
	buf := make([]byte, 8<<10)
	got := 0
	for {
		n, err := c.Read(buf)
		if got+n > size || !bytes.Equal(buf[:n], sent[got:got+n]) {
			return got, errors.New("echo through the proxy is not a prefix of what was sent")
		}
		got += n
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return got, err
		}
		if err != nil {
			c.Close() // unblocks the writer
			return got, nil
		}
	}
}

func TestClose(t *testing.T) {
	echo := startEcho(t)
	p, err := faultproxy.New(faultproxy.Config{Target: echo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	lns := make([]net.Listener, 2)
	served := make(chan error, len(lns))
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		go func() { served <- p.Serve(lns[i]) }()
	}
	cs := []*net.TCPConn{dial(t, lns[0].Addr().String()), dial(t, lns[1].Addr().String())}
	for _, c := range cs {
		roundTrip(t, c, []byte("hi"))
	}
	p.StallAll(faultproxy.Both, time.Hour) // Close must not wait for a stall
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range lns {
		if err := <-served; !errors.Is(err, faultproxy.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	}
	for _, c := range cs {
		if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read after Close: got %d bytes, err %v, want EOF or reset", n, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(ln); !errors.Is(err, faultproxy.ErrServerClosed) {
		t.Errorf("Serve after Close: got %v, want ErrServerClosed", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("Serve after Close left its listener open")
	}
}

func TestLimits(t *testing.T) {
	t.Run("max conns", func(t *testing.T) {
		p, addr := startProxy(t, faultproxy.Config{Target: startEcho(t), MaxConns: 1})
		roundTrip(t, dial(t, addr), []byte("first"))
		if n, err := dial(t, addr).Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("second connection: got %d bytes, err %v, want EOF or reset", n, err)
		}
		if st := p.Stats(); st.Rejected != 1 || st.Connections != 1 || st.Active != 1 {
			t.Errorf("Stats: got %+v, want 1 rejected, 1 connection, 1 active", st)
		}
	})
	t.Run("target down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := ln.Addr().String()
		ln.Close()
		p, addr := startProxy(t, faultproxy.Config{Target: down})
		if n, err := dial(t, addr).Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: got %d bytes, err %v, want EOF or reset", n, err)
		}
		if st := p.Stats(); st.DialFailures != 1 {
			t.Errorf("Stats.DialFailures: got %d, want 1", st.DialFailures)
		}
	})
}

func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}
