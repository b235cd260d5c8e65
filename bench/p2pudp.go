package bench

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Defaults of [P2PUDPConfig].
const (
	DefaultP2PUDPPairs     = 1
	DefaultP2PUDPSize      = 64
	DefaultP2PUDPStartRate = 20000
	DefaultP2PUDPMaxRate   = 2_000_000
	DefaultP2PUDPFactor    = 1.25
	DefaultP2PUDPStep      = 2 * time.Second
	DefaultP2PUDPMaxLoss   = 0.001
	// MaxP2PUDPPairs bounds the load.
	MaxP2PUDPPairs = 256
)

// P2PUDPConfig configures [RunP2PUDP]: sealed UDP_MESSAGEs through a hub's
// UDP port, or (Forwarder set) datagrams of the same size through a bare
// UDP forwarder, at a rising rate until the loss passes MaxLoss.
type P2PUDPConfig struct {
	// Hub, Fingerprint, Network: as [P2PConfig]. The hub must run with
	// --allow-anonymous and --hub-peer-datagram-rate -1.
	Hub, Fingerprint, Network string
	// Forwarder and ForwarderTo, when set, measure a bare forwarder
	// instead of the hub: datagrams go to Forwarder, which must write
	// them to ForwarderTo (the bench listens there).
	Forwarder, ForwarderTo string
	// Pairs of sender and receiver. Zero means DefaultP2PUDPPairs.
	Pairs int
	// Size is the envelope payload in bytes (the datagram is Size plus
	// the routing header, envelope flags and the 29 sealing bytes). Zero
	// means DefaultP2PUDPSize.
	Size int
	// StartRate, MaxRate (datagrams/s, all senders) and Factor make the
	// ladder of rates; Step is each rate's duration. Zero: defaults.
	StartRate, MaxRate int
	Factor             float64
	Step               time.Duration
	// MaxLoss is the loss over which a rate is not loss-free. Zero means
	// DefaultP2PUDPMaxLoss.
	MaxLoss float64
	// PID is the process whose CPU is measured per datagram (Linux
	// /proc); MetricsURL the hub process's /metrics otherwise. Neither:
	// not measured.
	PID        int
	MetricsURL string
	// Out receives the report. Nil means none.
	Out io.Writer
}

// P2PUDPStep is one rate of the ladder.
type P2PUDPStep struct {
	Offered, Delivered float64 // datagrams/s
	Loss               float64
	TargetCPUPerDgram  time.Duration // 0 when not measured
	BenchCPUPerDgram   time.Duration
}

// P2PUDPResult is what [RunP2PUDP] measured.
type P2PUDPResult struct {
	DatagramSize int
	Steps        []P2PUDPStep
	// LossFree is the highest delivered rate of a step within MaxLoss;
	// the ladder ends at the second lossy step in a row.
	LossFree float64
}

type udpPair struct {
	send, recv *net.UDPConn
	sendUC     *udpio.Conn
	recvUC     *udpio.Conn
	to         netip.AddrPort
	plain      []byte        // what is sealed (hub) or sent as is (forwarder)
	side       *p2pseal.Side // the sender's key; nil for the forwarder
	conns      []*benchPeer  // TLS connections to close
	got        atomic.Uint64
}

// RunP2PUDP runs the ladder and reports each step.
func RunP2PUDP(ctx context.Context, cfg P2PUDPConfig) (*P2PUDPResult, error) {
	cfg.Pairs = cmp.Or(cfg.Pairs, DefaultP2PUDPPairs)
	cfg.Size = cmp.Or(cfg.Size, DefaultP2PUDPSize)
	cfg.StartRate = cmp.Or(cfg.StartRate, DefaultP2PUDPStartRate)
	cfg.MaxRate = cmp.Or(cfg.MaxRate, DefaultP2PUDPMaxRate)
	cfg.Factor = cmp.Or(cfg.Factor, DefaultP2PUDPFactor)
	cfg.Step = cmp.Or(cfg.Step, DefaultP2PUDPStep)
	cfg.MaxLoss = cmp.Or(cfg.MaxLoss, DefaultP2PUDPMaxLoss)
	cfg.Network = cmp.Or(cfg.Network, DefaultP2PNetwork)
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	switch {
	case cfg.Pairs < 1 || cfg.Pairs > MaxP2PUDPPairs:
		return nil, fmt.Errorf("bench p2p --udp: --pairs %d: want 1..%d", cfg.Pairs, MaxP2PUDPPairs)
	case cfg.Size < 0 || cfg.Size > 1000:
		return nil, fmt.Errorf("bench p2p --udp: --size %d: want 0..1000 (one datagram)", cfg.Size)
	case cfg.Factor <= 1 || cfg.StartRate < 1 || cfg.MaxRate < cfg.StartRate:
		return nil, errors.New("bench p2p --udp: the rate ladder needs --factor > 1 and 1 ≤ --start-rate ≤ --max-rate")
	case cfg.Forwarder == "" && cfg.Hub == "":
		return nil, errors.New("bench p2p --udp: no hub address and no --forwarder")
	case (cfg.Forwarder == "") != (cfg.ForwarderTo == ""):
		return nil, errors.New("bench p2p --udp: --forwarder and --forwarder-to go together")
	}
	var pairs []*udpPair
	var readers sync.WaitGroup
	defer func() {
		bye, _ := p2pwire.AppendMessageFrame(nil, &p2pwire.Goodbye{})
		for _, p := range pairs {
			if p.send != nil {
				_ = p.send.Close()
			}
			if p.recv != nil {
				_ = p.recv.Close()
			}
			for _, c := range p.conns {
				_ = c.c.SetDeadline(time.Now().Add(time.Second))
				_, _ = c.c.Write(bye)
				_ = c.c.Close()
			}
		}
		readers.Wait()
	}()
	for i := range cfg.Pairs {
		var p *udpPair
		var err error
		if cfg.Forwarder != "" {
			if i > 0 {
				return nil, errors.New("bench p2p --udp: a forwarder takes one pair")
			}
			p, err = forwarderPair(cfg)
		} else {
			p, err = hubPair(ctx, cfg, &readers)
		}
		if p != nil {
			pairs = append(pairs, p) // closed by the deferred function, whole or not
		}
		if err != nil {
			return nil, err
		}
	}
	for _, p := range pairs {
		readers.Add(1)
		go func() { defer readers.Done(); p.read() }()
	}
	res := &P2PUDPResult{}
	if pairs[0].side != nil {
		res.DatagramSize = len(pairs[0].plain) + 29
	} else {
		res.DatagramSize = len(pairs[0].plain)
	}
	target := "hub"
	if cfg.Forwarder != "" {
		target = "forwarder"
	}
	fmt.Fprintf(cfg.Out, "%s: %d pair(s), %d-byte datagrams, steps of %s, loss-free: loss ≤ %.2f%%\n",
		target, cfg.Pairs, res.DatagramSize, cfg.Step, 100*cfg.MaxLoss)
	fmt.Fprintf(cfg.Out, "%10s %10s %8s %12s %12s\n", "offered/s", "deliv/s", "loss", "target µs/dg", "bench µs/dg")
	fails := 0
	for rate := float64(cfg.StartRate); rate <= float64(cfg.MaxRate); rate *= cfg.Factor {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		st, err := runStep(ctx, cfg, pairs, rate)
		if err != nil {
			return res, err
		}
		res.Steps = append(res.Steps, st)
		tcpu := "-"
		if st.TargetCPUPerDgram > 0 {
			tcpu = fmt.Sprintf("%.2f", float64(st.TargetCPUPerDgram.Nanoseconds())/1e3)
		}
		fmt.Fprintf(cfg.Out, "%10.0f %10.0f %7.3f%% %12s %12.2f\n", st.Offered, st.Delivered, 100*st.Loss, tcpu,
			float64(st.BenchCPUPerDgram.Nanoseconds())/1e3)
		if st.Loss > cfg.MaxLoss {
			// Two lossy steps in a row end the ladder: on a shared machine
			// one stall of the measured process loses a burst.
			if fails++; fails == 2 {
				break
			}
			continue
		}
		fails = 0
		res.LossFree = max(res.LossFree, st.Delivered)
	}
	fmt.Fprintf(cfg.Out, "RESULT %s loss-free %.0f datagrams/s\n", target, res.LossFree)
	return res, nil
}

// runStep sends at rate for cfg.Step and counts what arrives, with 300 ms
// for the last datagrams to land.
func runStep(ctx context.Context, cfg P2PUDPConfig, pairs []*udpPair, rate float64) (P2PUDPStep, error) {
	var got0 uint64
	for _, p := range pairs {
		got0 += p.got.Load()
	}
	cpu0, err := targetCPU(ctx, cfg)
	if err != nil {
		return P2PUDPStep{}, err
	}
	b0 := processCPU()
	var wg sync.WaitGroup
	var sent atomic.Uint64
	errs := make(chan error, len(pairs))
	start := time.Now()
	for _, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := p.pace(ctx, rate/float64(len(pairs)), cfg.Step)
			sent.Add(n)
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(300 * time.Millisecond)
	b1 := processCPU()
	cpu1, err := targetCPU(ctx, cfg)
	if err != nil {
		return P2PUDPStep{}, err
	}
	select {
	case err := <-errs:
		return P2PUDPStep{}, err
	default:
	}
	var got1 uint64
	for _, p := range pairs {
		got1 += p.got.Load()
	}
	n, s := float64(got1-got0), float64(sent.Load())
	st := P2PUDPStep{Offered: s / elapsed.Seconds(), Delivered: n / elapsed.Seconds()}
	if s > 0 {
		st.Loss = max(0, 1-n/s)
	}
	if n > 0 {
		if cpu0 >= 0 && cpu1 >= 0 {
			st.TargetCPUPerDgram = time.Duration(float64(cpu1-cpu0) / n)
		}
		st.BenchCPUPerDgram = time.Duration(float64(b1-b0) / n)
	}
	return st, nil
}

// targetCPU is the measured process's CPU time, -1 when not measured.
func targetCPU(ctx context.Context, cfg P2PUDPConfig) (time.Duration, error) {
	switch {
	case cfg.PID > 0:
		return pidCPU(cfg.PID)
	case cfg.MetricsURL != "":
		m, err := scrape(ctx, cfg.MetricsURL)
		if err != nil {
			return 0, err
		}
		return time.Duration(m.CPUSeconds * 1e9), nil
	}
	return -1, nil
}

// pidCPU reads utime+stime of a process from /proc (clock ticks of
// 10 ms, the usual USER_HZ).
func pidCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("bench p2p --udp: CPU of pid %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench p2p --udp: /proc/%d/stat unreadable", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench p2p --udp: /proc/%d/stat too short", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench p2p --udp: /proc/%d/stat unreadable", pid)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// pace sends at rate datagrams/s for d, in batches, and returns how many
// it sent.
func (p *udpPair) pace(ctx context.Context, rate float64, d time.Duration) (uint64, error) {
	batch := p.sendUC.Batch()
	ms := make([]udpio.Message, batch)
	for i := range ms {
		ms[i].Buf = make([]byte, 0, p2pwire.MaxDatagramSize)
		ms[i].Addr = p.to
	}
	start := time.Now()
	var sent uint64
	for {
		el := time.Since(start)
		if el >= d || ctx.Err() != nil {
			return sent, nil
		}
		due := uint64(rate*el.Seconds()) - min(sent, uint64(rate*el.Seconds()))
		if due == 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		n := int(min(due, uint64(batch)))
		for i := range n {
			if p.side != nil {
				b, err := p.side.Seal.Seal(ms[i].Buf[:0], p.plain)
				if err != nil {
					return sent, err
				}
				ms[i].Buf = b
			} else {
				ms[i].Buf = append(ms[i].Buf[:0], p.plain...)
			}
		}
		w, err := p.sendUC.WriteBatch(ms[:n])
		sent += uint64(w)
		if err != nil {
			return sent, fmt.Errorf("bench p2p --udp: send: %w", err)
		}
	}
}

// read counts the datagrams that arrive until the socket closes.
func (p *udpPair) read() {
	ms := make([]udpio.Message, p.recvUC.Batch())
	for i := range ms {
		ms[i].Buf = make([]byte, p2pwire.MaxDatagramSize)
	}
	for {
		n, err := p.recvUC.ReadBatch(ms)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.got.Add(uint64(n))
	}
}

func listenUDP(addr string) (*net.UDPConn, *udpio.Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, nil, err
	}
	uc, err := udpio.New(c, udpio.Config{})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, uc, nil
}

// localFor is a local address of the hub address's family.
func localFor(hub *net.UDPAddr) string {
	if hub.IP.To4() == nil {
		return "[::]:0"
	}
	return "0.0.0.0:0"
}

func envelopeOf(size int) p2pwire.Envelope {
	return p2pwire.Envelope{Payload: make([]byte, size)}
}

// forwarderPair sends to the forwarder and listens where it forwards.
func forwarderPair(cfg P2PUDPConfig) (*udpPair, error) {
	to, err := netip.ParseAddrPort(cfg.Forwarder)
	if err != nil {
		return nil, fmt.Errorf("bench p2p --udp: --forwarder: %w", err)
	}
	p := &udpPair{to: to}
	if p.send, p.sendUC, err = listenUDP("127.0.0.1:0"); err != nil {
		return nil, err
	}
	if p.recv, p.recvUC, err = listenUDP(cfg.ForwarderTo); err != nil {
		_ = p.send.Close()
		return nil, fmt.Errorf("bench p2p --udp: listen on --forwarder-to: %w", err)
	}
	// The same size as the hub's datagrams: routing header with a peer
	// id as the hub gives anonymous peers ("anonymous~" and 9 random bytes
	// in base64: 22 bytes), envelope flags, payload, sealing.
	plain, _ := (&p2pwire.UDPMsg{Route: p2pwire.Route{To: "anonymous~abcdefghijkl"}, Envelope: envelopeOf(cfg.Size)}).AppendTo(nil)
	p.plain = make([]byte, len(plain)+29)
	return p, nil
}

// hubPair joins two anonymous peers, registers both, and gets ready to
// send from the first to the second. wg tracks the goroutines that drain
// their TLS connections.
func hubPair(ctx context.Context, cfg P2PUDPConfig, wg *sync.WaitGroup) (*udpPair, error) {
	tcfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true} // pinned below, or not verified
	if cfg.Fingerprint != "" {
		want := cfg.Fingerprint
		tcfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || fingerprint(raw[0]) != want {
				return errors.New("bench p2p: the hub's certificate does not match --fingerprint")
			}
			return nil
		}
	}
	hubUDP, err := net.ResolveUDPAddr("udp", cfg.Hub)
	if err != nil {
		return nil, err
	}
	p := &udpPair{}
	var sides [2]p2pseal.Side
	var ids [2]p2pwire.PeerID
	socks := [2]**net.UDPConn{&p.send, &p.recv}
	ucs := [2]**udpio.Conn{&p.sendUC, &p.recvUC}
	for i := range 2 {
		bp, w, err := dialUDPPeer(ctx, cfg.Hub, tcfg, cfg.Network)
		if err != nil {
			return p, err
		}
		p.conns = append(p.conns, bp)
		wg.Go(func() { drain(bp.br) }) // events; the hub drops a peer that does not read; ends when the connection closes
		if w.UDP == nil {
			return p, errors.New("bench p2p --udp: the hub offers no UDP (--hub-no-udp?)")
		}
		if sides[i], err = p2pseal.PeerSide(w.UDP.Secret[:], w.UDP.KeyID); err != nil {
			return p, err
		}
		ids[i] = w.PeerID
		if *socks[i], *ucs[i], err = listenUDP(localFor(hubUDP)); err != nil {
			return p, err
		}
		if err := register(*socks[i], sides[i], hubUDP.AddrPort()); err != nil {
			return p, err
		}
	}
	p.side, p.to = &sides[0], hubUDP.AddrPort()
	p.plain, err = (&p2pwire.UDPMsg{Route: p2pwire.Route{To: ids[1]}, Envelope: envelopeOf(cfg.Size)}).AppendTo(nil)
	return p, err
}

// dialUDPPeer is dialPeer, keeping WELCOME (its UDP session).
func dialUDPPeer(ctx context.Context, addr string, tcfg *tls.Config, network string) (*benchPeer, *p2pwire.Welcome, error) {
	bp, err := dialPeer(ctx, addr, tcfg, network)
	if err != nil {
		return nil, nil, err
	}
	return bp, bp.welcome, nil
}

func drain(br *bufio.Reader) { _, _ = io.Copy(io.Discard, br) }

// register sends REGISTER until REGISTERED, for up to 5 s, and answers
// the hub's PATH_CHALLENGE (which comes first), so that the hub sends
// this socket datagrams without the limit of an unvalidated endpoint
// (docs/protocol/p2p.md §12.4).
func register(c *net.UDPConn, side p2pseal.Side, hub netip.AddrPort) error {
	plain, _ := (&p2pwire.Register{}).AppendTo(nil)
	buf := make([]byte, 2048)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		d, err := side.Seal.Seal(nil, plain)
		if err != nil {
			return err
		}
		if _, err := c.WriteToUDPAddrPort(d, hub); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			pt, _, err := side.Open.Open(nil, buf[:n])
			if err != nil {
				continue
			}
			var ch p2pwire.PathChallenge
			if ch.Unmarshal(pt) == nil {
				resp, _ := (&p2pwire.PathResponse{Data: ch.Data}).AppendTo(nil)
				if d, err = side.Seal.Seal(nil, resp); err != nil {
					return err
				}
				if _, err := c.WriteToUDPAddrPort(d, hub); err != nil {
					return err
				}
				continue
			}
			if len(pt) > 0 && p2pwire.Kind(pt[0]) == p2pwire.KindRegistered {
				_ = c.SetReadDeadline(time.Time{})
				return nil
			}
		}
	}
	return errors.New("bench p2p --udp: no REGISTERED from the hub's UDP port")
}
