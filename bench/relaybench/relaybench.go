package relaybench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/tokens"
)

// Limits of [Config].
const (
	// MinSize is the smallest payload: pair (4), sequence (8), send
	// time (8).
	MinSize = 20
	// MaxSize is the largest payload that fits UTP's largest datagram.
	MaxSize = 1472 - relaywire.RelayHeaderSize
	// DefaultWarmup is sent before the measured window.
	DefaultWarmup = 2 * time.Second
)

// Config configures Run. Exactly one of Target and Forwarder is
// set.
type Config struct {
	// Target is a relay node's UDP address. Every pair gets a host and a
	// joiner allocation, sealed here from Keys for NodeID and BootEpoch
	// (which must be the target's), binds, connects, and the joiner sends
	// RELAY messages to the host.
	Target    string
	Keys      *tokens.RelayKeyring
	NodeID    string
	BootEpoch uint64

	// Forwarder is the address of a bare forwarder (shared/baselines
	// udpfwd) that writes every datagram to ForwarderTo, where the bench
	// listens: the baseline, with datagrams of the same size.
	Forwarder, ForwarderTo string

	Pairs    int           // sender/receiver pairs; required
	Size     int           // payload bytes per RELAY, MinSize–MaxSize; required
	Rate     int           // datagrams per second offered, all pairs together; required
	Duration time.Duration // measured window; required
	// Warmup is sent before the window. Zero: DefaultWarmup.
	Warmup time.Duration
	// ServerPID is the relay's (or forwarder's) process id, for its CPU
	// time (Linux /proc); 0 skips it.
	ServerPID int
	// Out receives a progress line each second and the report; nil
	// discards them.
	Out io.Writer
}

// Result is the outcome of Run's measured window.
type Result struct {
	Offered, Forwarded uint64
	Loss               float64       // 1 - forwarded/offered
	P50, P99, P999     time.Duration // send → receive through the relay, on loopback
	ServerCPU          time.Duration // 0 without ServerPID
	CPUPerPacket       time.Duration // ServerCPU / Forwarded
}

// fineHist counts latencies in 1 µs buckets up to 50 ms.
type fineHist struct{ c [50_001]atomic.Uint64 }

func (h *fineHist) record(d time.Duration) {
	i := min(max(int(d/time.Microsecond), 0), len(h.c)-1)
	h.c[i].Add(1)
}

func (h *fineHist) quantile(q float64) time.Duration {
	var n uint64
	for i := range h.c {
		n += h.c[i].Load()
	}
	if n == 0 {
		return 0
	}
	rank := max(uint64(q*float64(n)+0.5), 1)
	var seen uint64
	for i := range h.c {
		if seen += h.c[i].Load(); seen >= rank {
			return time.Duration(i+1) * time.Microsecond
		}
	}
	return time.Duration(len(h.c)) * time.Microsecond
}

// benchSockets are the bench's two sockets: every pair's joiner (or
// sender) sends from tx, every host (or the forwarder's destination)
// receives on rx, so that the relay, like the bare forwarder, writes to
// one destination and the bench's own cost is the same in both modes.
type benchSockets struct {
	tx   *net.UDPConn
	txio *udpio.Conn
	to   netip.AddrPort // the relay or the forwarder
	rx   *net.UDPConn
}

func (b *benchSockets) close() {
	if b.tx != nil {
		b.tx.Close()
	}
	if b.rx != nil {
		b.rx.Close()
	}
}

func openBenchSockets(to netip.AddrPort, rxAddr string) (*benchSockets, error) {
	b := &benchSockets{to: to}
	var err error
	if b.tx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		return b, fmt.Errorf("bench: %w", err)
	}
	if b.txio, err = udpio.New(b.tx, udpio.Config{Batch: 64}); err != nil {
		return b, fmt.Errorf("bench: %w", err)
	}
	ua, err := net.ResolveUDPAddr("udp4", rxAddr)
	if err != nil {
		return b, fmt.Errorf("bench: receive address: %w", err)
	}
	if b.rx, err = net.ListenUDP("udp4", ua); err != nil {
		return b, fmt.Errorf("bench: listening on %s: %w", rxAddr, err)
	}
	_ = b.rx.SetReadBuffer(8 << 20)
	return b, nil
}

// Run offers Rate datagrams per second through a relay (or the bare
// forwarder) for Warmup + Duration and reports what came through.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	switch {
	case (cfg.Target == "") == (cfg.Forwarder == ""):
		return res, errors.New("bench: give a relay target or a forwarder")
	case cfg.Pairs < 1 || cfg.Pairs > 10_000:
		return res, fmt.Errorf("bench: pairs %d out of [1, 10000]", cfg.Pairs)
	case cfg.Size < MinSize || cfg.Size > MaxSize:
		return res, fmt.Errorf("bench: size %d out of [%d, %d]", cfg.Size, MinSize, MaxSize)
	case cfg.Rate < 1 || cfg.Duration <= 0:
		return res, errors.New("bench: rate and duration must be positive")
	case cfg.Target != "" && cfg.Keys == nil:
		return res, errors.New("bench: a relay target needs the relay secret")
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = DefaultWarmup
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	var (
		socks *benchSockets
		tmpls [][]byte // one datagram per pair; the payload is its last Size bytes
		err   error
	)
	if cfg.Target != "" {
		socks, tmpls, err = setupRelayPairs(ctx, &cfg)
	} else {
		socks, tmpls, err = setupForwarderPairs(&cfg)
	}
	if socks != nil {
		defer socks.close()
	}
	if err != nil {
		return res, err
	}

	base := time.Now()
	var (
		hist      fineHist
		offered   atomic.Uint64
		forwarded atomic.Uint64
		window    atomic.Int64 // nanoseconds since base at which the window starts; 0 before it
		wg        sync.WaitGroup
	)
	window.Store(1 << 62)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rio, err := udpio.New(socks.rx, udpio.Config{Batch: 64})
		if err != nil {
			return
		}
		ms := make([]udpio.Message, 64)
		for i := range ms {
			ms[i].Buf = make([]byte, 2048)
		}
		for {
			n, err := rio.ReadBatch(ms)
			if err != nil {
				return
			}
			now := int64(time.Since(base))
			for _, m := range ms[:n] {
				if m.N < relaywire.RelayHeaderSize+MinSize {
					continue
				}
				sent := int64(binary.LittleEndian.Uint64(m.Buf[relaywire.RelayHeaderSize+12:]))
				if sent < window.Load() {
					continue
				}
				forwarded.Add(1)
				hist.record(time.Duration(now - sent))
			}
		}
	}()

	fmt.Fprintf(out, "offering %d datagrams/s of %d payload bytes over %d pairs to %s; warm-up %s, window %s\n",
		cfg.Rate, cfg.Size, len(tmpls), targetName(cfg.Target, cfg.Forwarder), cfg.Warmup, cfg.Duration)
	end := cfg.Warmup + cfg.Duration
	var cpu0 time.Duration
	var cpuErr error
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		sendLoop(ctx, &cfg, socks, tmpls, base, end, &offered, &window, func() {
			cpu0, cpuErr = procCPU(cfg.ServerPID)
		}, out, &forwarded, &hist)
	}()
	<-senderDone
	cpu1, err1 := procCPU(cfg.ServerPID)
	time.Sleep(300 * time.Millisecond) // the last datagrams in flight
	socks.rx.Close()
	wg.Wait()

	res.Offered, res.Forwarded = offered.Load(), forwarded.Load()
	if res.Offered > 0 {
		res.Loss = 1 - float64(res.Forwarded)/float64(res.Offered)
	}
	res.P50, res.P99, res.P999 = hist.quantile(0.5), hist.quantile(0.99), hist.quantile(0.999)
	if cfg.ServerPID != 0 && cpuErr == nil && err1 == nil {
		res.ServerCPU = cpu1 - cpu0
		if res.Forwarded > 0 {
			res.CPUPerPacket = res.ServerCPU / time.Duration(res.Forwarded)
		}
	}
	fmt.Fprintf(out, "offered %d, forwarded %d, loss %.3f%%\nlatency p50 %s, p99 %s, p999 %s\n",
		res.Offered, res.Forwarded, 100*res.Loss, res.P50, res.P99, res.P999)
	if cfg.ServerPID != 0 {
		fmt.Fprintf(out, "server CPU %s, %.2f µs per forwarded datagram\n", res.ServerCPU.Round(time.Millisecond), float64(res.CPUPerPacket)/1e3)
	}
	return res, ctx.Err()
}

func targetName(a, b string) string {
	if a != "" {
		return "relay " + a
	}
	return "forwarder " + b
}

// sendLoop paces the datagrams: every few hundred microseconds it sends
// what is due, round robin over the pairs, in batches of 64.
func sendLoop(ctx context.Context, cfg *Config, socks *benchSockets, tmpls [][]byte, base time.Time, end time.Duration,
	offered *atomic.Uint64, window *atomic.Int64, atWindow func(), out io.Writer, forwarded *atomic.Uint64, hist *fineHist) {
	const batchSize = 64
	bufs := make([][]byte, batchSize)
	for i := range bufs {
		bufs[i] = make([]byte, relaywire.RelayHeaderSize+cfg.Size)
	}
	batch := make([]udpio.Message, 0, batchSize)
	seqs := make([]uint64, len(tmpls))
	var sent uint64
	next := 0
	inWindow := false
	lastReport, lastOff, lastFwd := time.Duration(0), uint64(0), uint64(0)
	maxBurst := uint64(max(cfg.Rate/200, 1)) // 5 ms worth after a stall
	for ctx.Err() == nil {
		el := time.Since(base)
		if el >= end {
			return
		}
		if !inWindow && el >= cfg.Warmup {
			inWindow = true
			atWindow()
			window.Store(int64(time.Since(base)))
			offered.Store(0)
			lastOff, lastFwd = 0, 0
		}
		due := uint64(float64(cfg.Rate) * el.Seconds())
		if due > sent+maxBurst {
			sent = due - maxBurst // what a stall of the bench made late is not sent
		}
		for sent < due {
			k := min(due-sent, batchSize)
			now := uint64(time.Since(base))
			batch = batch[:0]
			for j := range k {
				i := next
				next = (next + 1) % len(tmpls)
				b := bufs[j]
				copy(b, tmpls[i])
				off := len(b) - cfg.Size
				binary.LittleEndian.PutUint32(b[off:], uint32(i))
				binary.LittleEndian.PutUint64(b[off+4:], seqs[i])
				binary.LittleEndian.PutUint64(b[off+12:], now)
				seqs[i]++
				batch = append(batch, udpio.Message{Buf: b, Addr: socks.to})
			}
			n, _ := socks.txio.WriteBatch(batch)
			if inWindow {
				offered.Add(uint64(n))
			}
			sent += k
		}
		if el-lastReport >= time.Second {
			off, fwd := offered.Load(), forwarded.Load()
			phase := "warm-up"
			if inWindow {
				phase = "window"
			}
			fmt.Fprintf(out, "%5.1fs %-7s offered %7d/s forwarded %7d/s p99 %s\n", el.Seconds(), phase,
				off-lastOff, fwd-lastFwd, hist.quantile(0.99))
			lastReport, lastOff, lastFwd = el, off, fwd
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func setupForwarderPairs(cfg *Config) (*benchSockets, [][]byte, error) {
	fwd, err := netip.ParseAddrPort(cfg.Forwarder)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: forwarder address: %w", err)
	}
	socks, err := openBenchSockets(fwd, cfg.ForwarderTo)
	if err != nil {
		return socks, nil, err
	}
	// The same bytes on the wire as a RELAY of Size bytes.
	tmpls := make([][]byte, cfg.Pairs)
	for i := range tmpls {
		tmpls[i] = make([]byte, relaywire.RelayHeaderSize+cfg.Size)
	}
	return socks, tmpls, nil
}

// setupRelayPairs makes, binds and connects a host and a joiner
// allocation per pair, as a Unity game does after the REST calls. Every
// host binds from the bench's receiving socket and every joiner from its
// sending socket (a relay serves many allocations bound at one address).
func setupRelayPairs(ctx context.Context, cfg *Config) (*benchSockets, [][]byte, error) {
	target, err := netip.ParseAddrPort(cfg.Target)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: relay address: %w", err)
	}
	socks, err := openBenchSockets(target, "127.0.0.1:0")
	if err != nil {
		return socks, nil, err
	}
	now := time.Now()
	mint := func(host relaywire.AllocationID) (relaywire.AllocationID, []byte, relaywire.Key, error) {
		c := tokens.RelayConnection{HostAllocationID: host, NodeID: cfg.NodeID, BootEpoch: cfg.BootEpoch,
			Issued: now, Expires: now.Add(time.Hour), MaxConnections: 1}
		rand.Read(c.AllocationID[:])
		blob, err := cfg.Keys.Seal(c)
		if err != nil {
			return relaywire.AllocationID{}, nil, relaywire.Key{}, err
		}
		k, err := cfg.Keys.AllocationKey(blob[0], c.AllocationID)
		return c.AllocationID, blob, relaywire.Key(k), err
	}
	var tmpls [][]byte
	for range cfg.Pairs {
		hostID, hostBlob, hostKey, err := mint(relaywire.AllocationID{})
		if err != nil {
			return socks, nil, err
		}
		joinID, joinBlob, joinKey, err := mint(hostID)
		if err != nil {
			return socks, nil, err
		}
		hb, _ := relaywire.NewBind(0, hostBlob, &hostKey)
		jb, _ := relaywire.NewBind(0, joinBlob, &joinKey)
		cr, _ := relaywire.NewConnectRequest(joinID, hostBlob)
		if err := exchange(ctx, socks.rx, target, hb, relaywire.TypeBindReceived); err != nil {
			return socks, nil, fmt.Errorf("bench: binding a host: %w", err)
		}
		if err := exchange(ctx, socks.tx, target, jb, relaywire.TypeBindReceived); err != nil {
			return socks, nil, fmt.Errorf("bench: binding a joiner: %w", err)
		}
		if err := exchange(ctx, socks.tx, target, cr, relaywire.TypeAccepted); err != nil {
			return socks, nil, fmt.Errorf("bench: connecting: %w", err)
		}
		tmpl, err := (&relaywire.Relay{From: joinID, To: hostID, Data: make([]byte, cfg.Size)}).AppendTo(nil)
		if err != nil {
			return socks, nil, err
		}
		tmpls = append(tmpls, tmpl)
	}
	return socks, tmpls, nil
}

// exchange sends m to the relay every 200 ms until an answer of type want
// comes (5 s at most); an ERROR fails it.
func exchange(ctx context.Context, c *net.UDPConn, to netip.AddrPort, m relaywire.Message, want relaywire.Type) error {
	b, err := m.AppendTo(nil)
	if err != nil {
		return err
	}
	buf := make([]byte, 2048)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := c.ReadFromUDPAddrPort(buf)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			continue
		}
		t, err := relaywire.Peek(buf[:n])
		switch {
		case err != nil:
		case t == want:
			return nil
		case t == relaywire.TypeError:
			var e relaywire.Error
			if e.Unmarshal(buf[:n]) == nil {
				return &e
			}
		}
	}
	return errors.New("no answer from the relay (is it running, with the same secret, node id and boot epoch?)")
}

// procCPU returns a process's user+system CPU time from /proc (Linux);
// 0 for pid 0.
func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server CPU: %w", err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bench: server CPU: bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("bench: server CPU: bad /proc stat")
	}
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck, nil
}
