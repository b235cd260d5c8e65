package bench

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Defaults of [P2PConfig].
const (
	DefaultP2PPeers    = 100
	DefaultP2PInflight = 16
	DefaultP2PDuration = 10 * time.Second
	DefaultP2PWarmup   = 3 * time.Second
	DefaultP2PNetwork  = "bench"
	// P2PPayloadSize is the payload of every bench message: a send time
	// (8 bytes), the originating side (1 byte) and padding.
	P2PPayloadSize = 32
	// MaxP2PPeers and MaxP2PInflight bound the load.
	MaxP2PPeers    = 4096
	MaxP2PInflight = 4096
)

// P2PConfig configures [RunP2P].
type P2PConfig struct {
	// Hub is the hub's HOST:PORT; Fingerprint the SHA-256 fingerprint of
	// its certificate to pin ("AB:CD:…", as the ready file has it).
	Hub, Fingerprint string
	// Network is the network the peers join anonymously (the hub must
	// run with --allow-anonymous). Empty means DefaultP2PNetwork.
	Network string
	// Peers (even) and Inflight (messages in flight per peer). Zero
	// means the defaults.
	Peers, Inflight int
	// Warmup and Duration: the measured window follows the warm-up.
	Warmup, Duration time.Duration
	// MetricsURL is the hub process's /metrics, for its CPU and RSS.
	// Empty: not reported.
	MetricsURL string
	// Out receives the report. Nil means none.
	Out io.Writer
}

// P2PResult is what [RunP2P] measured over the window.
type P2PResult struct {
	Messages     uint64        // received by the peers
	Rate         float64       // messages/s
	RTTP50       time.Duration // round trip through the hub and the partner, origin to origin
	RTTP99       time.Duration
	BenchCPU     time.Duration // this process
	HubCPU       time.Duration // the hub process (0 without MetricsURL)
	HubCPUPerMsg time.Duration
	HubRSS       float64 // bytes, at the end
	Window       time.Duration
}

// RunP2P connects Peers peers to a hub over TLS, speaking p2pwire directly,
// pairs peer i with peer i^1, and runs a closed loop: each peer seeds
// Inflight 32-byte messages to its partner, and every message received is
// sent back, so that each side keeps Inflight of its own in flight. The
// originator of each message records its round trip.
func RunP2P(ctx context.Context, cfg P2PConfig) (*P2PResult, error) {
	cfg.Peers = cmp.Or(cfg.Peers, DefaultP2PPeers)
	cfg.Inflight = cmp.Or(cfg.Inflight, DefaultP2PInflight)
	cfg.Duration = cmp.Or(cfg.Duration, DefaultP2PDuration)
	cfg.Warmup = cmp.Or(cfg.Warmup, DefaultP2PWarmup)
	cfg.Network = cmp.Or(cfg.Network, DefaultP2PNetwork)
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	switch {
	case cfg.Peers < 2 || cfg.Peers%2 != 0 || cfg.Peers > MaxP2PPeers:
		return nil, fmt.Errorf("bench p2p: --peers %d: want an even number in 2..%d", cfg.Peers, MaxP2PPeers)
	case cfg.Inflight < 1 || cfg.Inflight > MaxP2PInflight:
		return nil, fmt.Errorf("bench p2p: --inflight %d: want 1..%d", cfg.Inflight, MaxP2PInflight)
	case cfg.Hub == "":
		return nil, errors.New("bench p2p: no hub address")
	}
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	peers := make([]*benchPeer, cfg.Peers)
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Peers)
	sem := make(chan struct{}, 32)
	for i := range peers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			p, err := dialPeer(ctx, cfg.Hub, tcfg, cfg.Network)
			if err != nil {
				errs <- err
				return
			}
			peers[i] = p
		}()
	}
	wg.Wait()
	defer func() {
		// GOODBYE, so that the hub drops the peer ids at once instead of
		// keeping them for the resume window (the next run would find the
		// network full).
		bye, _ := p2pwire.AppendMessageFrame(nil, &p2pwire.Goodbye{})
		for _, p := range peers {
			if p != nil {
				_ = p.c.SetDeadline(time.Now().Add(time.Second))
				_, _ = p.c.Write(bye)
				_ = p.c.Close()
			}
		}
	}()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	fmt.Fprintf(cfg.Out, "%d peers connected to %s; %d in flight per peer, %d-byte payloads\n", cfg.Peers, cfg.Hub, cfg.Inflight, P2PPayloadSize)

	var recv, refused atomic.Uint64
	var hist Histogram
	var measuring atomic.Bool
	var loops sync.WaitGroup
	for i, p := range peers {
		partner := peers[i^1].id
		loops.Add(1)
		go func() {
			defer loops.Done()
			p.loop(partner, byte(i&1), cfg.Inflight, &recv, &refused, &hist, &measuring)
		}()
	}
	stopLoops := func() {
		for _, p := range peers {
			_ = p.c.SetReadDeadline(time.Now())
		}
		loops.Wait()
	}
	select {
	case <-time.After(cfg.Warmup):
	case <-ctx.Done():
		stopLoops()
		return nil, ctx.Err()
	}
	hist.Reset()
	measuring.Store(true)
	var m0, m1 serverMetrics
	var scrapeErr error
	if cfg.MetricsURL != "" {
		m0, scrapeErr = scrape(ctx, cfg.MetricsURL)
	}
	c0, r0, t0 := processCPU(), recv.Load(), time.Now()
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	c1, r1, t1 := processCPU(), recv.Load(), time.Now()
	if cfg.MetricsURL != "" && scrapeErr == nil {
		m1, scrapeErr = scrape(ctx, cfg.MetricsURL)
	}
	measuring.Store(false)
	stopLoops()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &P2PResult{
		Messages: r1 - r0, Window: t1.Sub(t0), BenchCPU: c1 - c0,
		RTTP50: hist.Quantile(0.5), RTTP99: hist.Quantile(0.99),
	}
	res.Rate = float64(res.Messages) / res.Window.Seconds()
	fmt.Fprintf(cfg.Out, "messages/s %.0f (%d in %.1fs)\nrtt p50 %s p99 %s (50 µs buckets)\nbench cpu %.0f%% of a core (%.2f µs per message)\n",
		res.Rate, res.Messages, res.Window.Seconds(), res.RTTP50, res.RTTP99,
		100*res.BenchCPU.Seconds()/res.Window.Seconds(), float64(res.BenchCPU.Microseconds())/float64(max(res.Messages, 1)))
	switch {
	case cfg.MetricsURL == "":
		fmt.Fprintln(cfg.Out, "hub cpu: not measured (no --metrics or ready file with admin)")
	case scrapeErr != nil:
		fmt.Fprintln(cfg.Out, "hub cpu: not measured:", scrapeErr)
	default:
		res.HubCPU = time.Duration((m1.CPUSeconds - m0.CPUSeconds) * 1e9)
		res.HubCPUPerMsg = res.HubCPU / time.Duration(max(res.Messages, 1))
		res.HubRSS = m1.RSSBytes
		fmt.Fprintf(cfg.Out, "hub cpu %.0f%% of a core (%.2f µs per message; hub counted %.0f routed)\nhub rss %.1f MiB\n",
			100*res.HubCPU.Seconds()/res.Window.Seconds(), float64(res.HubCPU.Nanoseconds())/1e3/float64(max(res.Messages, 1)),
			m1.HubRouted-m0.HubRouted, res.HubRSS/(1<<20))
	}
	if n := refused.Load(); n > 0 {
		// A refused message leaves the closed loop for good; enough of them
		// and nothing is left in flight, which reads as a hub that is slow.
		fmt.Fprintf(cfg.Out, "the hub refused %d messages (ERROR frames, usually rate_limited): raise its --hub-peer-rate and --hub-peer-bandwidth for a benchmark, or use more --peers or a smaller --inflight\n", n)
		if res.Messages == 0 {
			return nil, fmt.Errorf("bench p2p: no message came back during the measurement: the hub refused %d (see above)", n)
		}
	}
	return res, nil
}

// fingerprint is the SHA-256 of a DER certificate as colon-separated
// upper-case hex pairs (the ready file's form).
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// benchPeer is one connection speaking p2pwire.
type benchPeer struct {
	c       *tls.Conn
	br      *bufio.Reader
	id      p2pwire.PeerID
	welcome *p2pwire.Welcome
}

func dialPeer(ctx context.Context, addr string, tcfg *tls.Config, network string) (*benchPeer, error) {
	d := tls.Dialer{Config: tcfg, NetDialer: &net.Dialer{Timeout: 10 * time.Second}}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench p2p: dial %s: %w", addr, err)
	}
	c := nc.(*tls.Conn)
	p := &benchPeer{c: c, br: bufio.NewReaderSize(c, 64<<10)}
	hello, _ := p2pwire.AppendMessageFrame(nil, &p2pwire.Hello{Ticket: []byte("anonymous:" + network)})
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(hello); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bench p2p: HELLO: %w", err)
	}
	body, err := p2pwire.ReadFrame(p.br, nil, p2pwire.MaxFrameSize)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bench p2p: WELCOME: %w", err)
	}
	m, err := p2pwire.Decode(body)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("bench p2p: WELCOME: %w", err)
	}
	switch m := m.(type) {
	case *p2pwire.Welcome:
		p.id, p.welcome = m.PeerID, m
	case *p2pwire.Error:
		_ = c.Close()
		return nil, fmt.Errorf("bench p2p: the hub refused: %s (%s); does it run with --allow-anonymous (and --hub-max-peers at least --peers)?", m.Code, m.Reason)
	default:
		_ = c.Close()
		return nil, fmt.Errorf("bench p2p: got %s instead of WELCOME", m.Kind())
	}
	_ = c.SetDeadline(time.Time{})
	return p, nil
}

// loop seeds w messages to partner and echoes every message it receives;
// side tells its own messages (whose round trip it records) from its
// partner's. Each ERROR the hub sends (a refused message: the closed loop
// has one fewer in flight) is counted in refused. It returns when the
// connection fails (RunP2P ends it with a deadline).
func (p *benchPeer) loop(partner p2pwire.PeerID, side byte, w int, recv, refused *atomic.Uint64, hist *Histogram, measuring *atomic.Bool) {
	payload := make([]byte, P2PPayloadSize)
	payload[8] = side
	msg, _ := p2pwire.AppendMessageFrame(nil, &p2pwire.Msg{Route: p2pwire.Route{To: partner}, Envelope: p2pwire.Envelope{Payload: payload}})
	out := make([]byte, 0, 64<<10)
	now := time.Now().UnixNano()
	for range w {
		out = append(out, msg...)
		binary.BigEndian.PutUint64(out[len(out)-P2PPayloadSize:], uint64(now))
	}
	if _, err := p.c.Write(out); err != nil {
		return
	}
	for {
		// Everything buffered, frame by frame: a delivered MESSAGE's body is
		// kind, flags (from), the partner's id, the envelope; the echo is
		// the same bytes with flags "to", since from is the partner.
		hdr, err := p.br.Peek(4)
		if err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr))
		if n < 2 || 4+n > p.br.Size() {
			return
		}
		if _, err := p.br.Peek(4 + n); err != nil {
			return
		}
		buf, _ := p.br.Peek(p.br.Buffered())
		out = out[:0]
		off, got := 0, 0
		t := time.Now()
		ns := t.UnixNano()
		for off+4 <= len(buf) {
			l := int(binary.BigEndian.Uint32(buf[off:]))
			if off+4+l > len(buf) {
				break
			}
			body := buf[off+4 : off+4+l]
			off += 4 + l
			if len(body) > 0 && p2pwire.Kind(body[0]) == p2pwire.KindError {
				refused.Add(1)
				continue
			}
			if len(body) < 2+P2PPayloadSize || p2pwire.Kind(body[0]) != p2pwire.KindMessage || body[1] != p2pwire.FlagFrom {
				continue // peer events and the like
			}
			got++
			start := len(out)
			out = binary.BigEndian.AppendUint32(out, uint32(l))
			out = append(out, body...)
			out[start+5] = p2pwire.FlagTo
			pl := out[len(out)-P2PPayloadSize:]
			if pl[8] == side {
				if measuring.Load() {
					hist.Record(time.Duration(ns - int64(binary.BigEndian.Uint64(pl))))
				}
				binary.BigEndian.PutUint64(pl, uint64(ns))
			}
		}
		_, _ = p.br.Discard(off)
		recv.Add(uint64(got))
		if len(out) > 0 {
			if _, err := p.c.Write(out); err != nil {
				return
			}
		}
	}
}
