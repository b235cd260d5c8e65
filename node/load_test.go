package node_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestLoad measures the node under rooms × players bots that send one
// 16-byte INPUT per FRAME they receive. The bots run in a child process
// (the same test binary), so the CPU measured is the node's alone. It runs
// only when SWITCHBOARD_NODE_LOAD is set, as "rooms,players,tick,seconds":
//
//	SWITCHBOARD_NODE_LOAD=2500,4,30,10 go test ./node -run TestLoad -v
func TestLoad(t *testing.T) {
	spec := os.Getenv("SWITCHBOARD_NODE_LOAD")
	if spec == "" {
		t.Skip("set SWITCHBOARD_NODE_LOAD=rooms,players,tick,seconds")
	}
	var nRooms, players, tick, seconds int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d,%d", &nRooms, &players, &tick, &seconds); err != nil {
		t.Fatalf("SWITCHBOARD_NODE_LOAD=%q: %v", spec, err)
	}
	key := make([]byte, 32)
	copy(key, "load-test-signing-key-0123456789")
	e := newEnv(t, false, func(c *node.Config) {
		c.HandshakeTimeout = time.Minute
		c.Rooms.ConnectTimeout = time.Hour
		c.Signer, _ = tokens.NewSigner(key)
	})
	e.signer, _ = tokens.NewSigner(key)
	for i := range nRooms {
		rec := record(fmt.Sprintf("load-%d", i), func(r *store.Room) {
			r.TickRate, r.MaxPlayers, r.StartMode = tick, players, store.StartAuto
		})
		for s := range players {
			e.admit(rec, s)
		}
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadBots$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("SWITCHBOARD_NODE_LOAD_BOTS=%s,%s,%d,%d", e.url, hex.EncodeToString(key), nRooms, players))
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.Contains(sc.Text(), "bots connected") {
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()

	time.Sleep(2 * time.Second) // settle
	frames := func() float64 { return e.counter("switchboard_node_messages_out_total", "type", "FRAME") }
	inputs := func() float64 { return e.counter("switchboard_node_messages_in_total", "type", "INPUT") }
	f0, i0, u0, s0, w0 := frames(), inputs(), cpu(false), cpu(true), time.Now()
	time.Sleep(time.Duration(seconds) * time.Second)
	f1, i1, u1, s1, w1 := frames(), inputs(), cpu(false), cpu(true), time.Now()
	win := w1.Sub(w0).Seconds()
	want := float64(nRooms * players * tick)
	t.Logf("rooms %d × players %d at %d Hz, GOMAXPROCS %d, connections %v", nRooms, players, tick, runtime.GOMAXPROCS(0),
		e.counter("switchboard_node_connections"))
	t.Logf("FRAME out %.0f/s (%.1f%% of %.0f/s), INPUT in %.0f/s", (f1-f0)/win, 100*(f1-f0)/win/want, want, (i1-i0)/win)
	t.Logf("node CPU %.2f cores (user %.2f, kernel %.2f), %.2f µs per frame delivered",
		(u1-u0+s1-s0).Seconds()/win, (u1-u0).Seconds()/win, (s1-s0).Seconds()/win, (u1-u0+s1-s0).Seconds()*1e6/(f1-f0))
	t.Logf("tick lateness p50 ≤ %s p99 ≤ %s; tick duration p99 ≤ %s", quantile(e, "switchboard_node_tick_lateness_seconds", 0.5),
		quantile(e, "switchboard_node_tick_lateness_seconds", 0.99), quantile(e, "switchboard_node_tick_duration_seconds", 0.99))
	var disc []string
	for _, r := range []string{"client_closed", "network", "idle_timeout", "slow_consumer", "protocol_error", "handshake_failed", "handshake_timeout", "server_closed"} {
		if v := e.counter("switchboard_node_disconnects_total", "reason", r); v > 0 {
			disc = append(disc, fmt.Sprintf("%s %v", r, v))
		}
	}
	for c := uint8(1); c <= 11; c++ {
		if v := e.counter("switchboard_node_errors_total", "code", roomwire.CodeName(c)); v > 0 {
			disc = append(disc, fmt.Sprintf("ERROR %s %v", roomwire.CodeName(c), v))
		}
	}
	t.Logf("disconnects: %v", disc)
}

// TestLoadBots is the bot process of TestLoad.
func TestLoadBots(t *testing.T) {
	spec := os.Getenv("SWITCHBOARD_NODE_LOAD_BOTS")
	if spec == "" {
		t.Skip("run by TestLoad")
	}
	f := strings.Split(spec, ",")
	url := f[0]
	key, _ := hex.DecodeString(f[1])
	signer, _ := tokens.NewSigner(key)
	var nRooms, players int
	fmt.Sscan(f[2], &nRooms)
	fmt.Sscan(f[3], &players)

	input, _ := roomwire.Append(nil, &roomwire.Input{Data: []byte("0123456789abcdef")})
	frame := append([]byte{0x82, 0x80 | byte(len(input)), 0, 0, 0, 0}, input...) // zero mask key
	var wg sync.WaitGroup
	type seat struct{ room, seat int }
	seats := make(chan seat)
	go func() {
		for i := range nRooms {
			for s := range players {
				seats <- seat{i, s}
			}
		}
		close(seats)
	}()
	var dialers sync.WaitGroup
	for range 16 {
		dialers.Go(func() {
			for st := range seats {
				dialBot(t, &wg, url, signer, frame, st.room, st.seat)
			}
		})
	}
	dialers.Wait()
	fmt.Println("bots connected")
	wg.Wait()
}

func dialBot(t *testing.T, wg *sync.WaitGroup, url string, signer *tokens.Signer, frame []byte, i, s int) {
	d := ws.Dialer{Protocols: []string{node.Subprotocol}, Timeout: time.Minute}
	nc, br, _, err := d.Dial(context.Background(), url)
	if err != nil {
		t.Errorf("dial: %v", err)
		return
	}
	tk, _ := signer.SignConnectTicket(tokens.ConnectTicket{RoomID: fmt.Sprintf("load-%d", i), Seat: s, SessionID: session(s),
		ExpiresMS: time.Now().Add(time.Hour).UnixMilli(), ID: tokens.NewID()})
	hs, _ := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(tk), &roomwire.Hello{})
	if err := ws.WriteFrame(nc, ws.MaskFrameWith(ws.NewBinaryFrame(hs), [4]byte{})); err != nil {
		t.Error(err)
		return
	}
	var r io.Reader = nc
	if br != nil {
		r = br
	}
	wg.Go(func() {
		rd := bufio.NewReaderSize(r, 4096)
		var hdr [ws.MaxHeaderSize - 2]byte
		buf := make([]byte, 8<<10)
		for {
			h, err := ws.ReadHeaderBuffer(rd, hdr[:])
			if err != nil || h.Length > int64(len(buf)) {
				return
			}
			p := buf[:h.Length]
			if _, err := io.ReadFull(rd, p); err != nil {
				return
			}
			if h.OpCode == ws.OpBinary && len(p) > 0 && roomwire.Type(p[0]) == roomwire.TypeFrame {
				if _, err := nc.Write(frame); err != nil {
					return
				}
			}
		}
	})
}

func cpu(kernel bool) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	if kernel {
		return time.Duration(ru.Stime.Nano())
	}
	return time.Duration(ru.Utime.Nano())
}

// quantile returns the upper bound of the histogram bucket holding q.
func quantile(e *env, name string, q float64) string {
	fams, _ := e.reg.Gather()
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		rank := uint64(q * float64(h.GetSampleCount()))
		bs := h.GetBucket()
		i := sort.Search(len(bs), func(i int) bool { return bs[i].GetCumulativeCount() >= rank })
		if i == len(bs) {
			return "+Inf"
		}
		return time.Duration(bs[i].GetUpperBound() * float64(time.Second)).String()
	}
	return "?"
}

var _ net.Conn // keep net for the dialer's types
