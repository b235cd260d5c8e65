package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/impair"
)

// BotsPerUDPSocket is how many bots share one UDP socket (and its reader,
// writer and KCP loop goroutines) in [UDPPath].
const BotsPerUDPSocket = 500

// udpReadBuffer is the receive buffer each shared socket asks for: 500
// bots at 30 Hz receive about 30,000 datagrams a second, and with the
// SDK's 1 MiB a 20 ms wait for the CPU overflowed it (the kernel's
// RcvbufErrors counted thousands of FRAMEs a run on a busy machine).
const udpReadBuffer = 8 << 20

// UDPPath is the bench side of the UDP channel: sockets that the bots
// share, with batched reads and writes, so that the bench is not the
// limit; and, when Loss or Jitter is set, an impairment proxy
// (internal/impair) in front of the node that drops and delays datagrams
// both ways. The proxy is started at the first handshake, towards the
// node's connect.udp; one proxy means one node, which is what the
// benchmarks run. Close it after the bots.
type UDPPath struct {
	socks  []*rooms.UDPSocket
	faults impair.Faults
	log    *slog.Logger

	mu    sync.Mutex
	proxy *impair.Proxy
	addr  netip.AddrPort // the proxy's
	err   error          // why no proxy could start
	wg    sync.WaitGroup
}

// NewUDPPath opens the sockets for bots bots; loss (a probability) and
// jitter (a uniform extra delay in [0, jitter)) apply to each direction.
func NewUDPPath(bots int, loss float64, jitter time.Duration, log *slog.Logger) (*UDPPath, error) {
	if loss < 0 || loss > 1 || jitter < 0 {
		return nil, errors.New("bench: --loss must be in [0, 1] and --jitter ≥ 0")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &UDPPath{faults: impair.Faults{Loss: loss, Jitter: jitter}, log: log}
	var redirect func(netip.AddrPort) netip.AddrPort
	if loss > 0 || jitter > 0 {
		redirect = p.redirect
	}
	for range max(1, (bots+BotsPerUDPSocket-1)/BotsPerUDPSocket) {
		s, err := rooms.NewUDPSocket(rooms.UDPSocketConfig{Listen: "", Redirect: redirect, Logger: log, ReadBuffer: udpReadBuffer})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("bench: %w", err)
		}
		p.socks = append(p.socks, s)
	}
	return p, nil
}

// Socket returns the socket of bot i.
func (p *UDPPath) Socket(i int) *rooms.UDPSocket { return p.socks[i%len(p.socks)] }

// redirect starts the proxy towards node on first use and returns its
// address; without a proxy it returns node (and Err says why).
func (p *UDPPath) redirect(node netip.AddrPort) netip.AddrPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proxy != nil {
		return p.addr
	}
	if p.err != nil {
		return node
	}
	px, err := impair.New(impair.Config{Target: node.String(), Up: p.faults, Down: p.faults, Logger: p.log, QueueDepth: impair.MaxQueueDepth})
	if err == nil {
		var uc *net.UDPConn
		if uc, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err == nil {
			p.proxy, p.addr = px, uc.LocalAddr().(*net.UDPAddr).AddrPort()
			p.wg.Add(1)
			go func() { defer p.wg.Done(); _ = px.Serve(uc) }()
			return p.addr
		}
		px.Close()
	}
	p.err = fmt.Errorf("bench: impairment proxy: %w", err)
	return node
}

// Err returns why the impairment proxy could not start, if it could not.
func (p *UDPPath) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stats returns the proxy's counters; ok is false without a proxy.
func (p *UDPPath) Stats() (st impair.Stats, ok bool) {
	p.mu.Lock()
	px := p.proxy
	p.mu.Unlock()
	if px == nil {
		return st, false
	}
	return px.Stats(), true
}

// Close closes the proxy and the sockets.
func (p *UDPPath) Close() error {
	p.mu.Lock()
	px := p.proxy
	p.mu.Unlock()
	if px != nil {
		px.Close()
	}
	p.wg.Wait()
	for _, s := range p.socks {
		s.Close()
	}
	return nil
}
