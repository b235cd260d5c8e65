package udpio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Defaults of [Config].
const (
	// DefaultBatch is the most datagrams one ReadBatch or WriteBatch moves.
	DefaultBatch = 32
	// DefaultReadBuffer is the socket receive buffer asked for, in bytes.
	DefaultReadBuffer = 8 << 20
	// DefaultWriteBuffer is the socket send buffer asked for, in bytes.
	DefaultWriteBuffer = 8 << 20
	// MaxBatch bounds Config.Batch (the kernel's UIO_MAXIOV is 1024).
	MaxBatch = 1024
)

// ErrConfig is wrapped by New's errors for a bad Config.
var ErrConfig = errors.New("udpio: bad config")

// Config configures a [Conn]; its zero value works.
type Config struct {
	// Batch is the most datagrams per call, zero: DefaultBatch, at most
	// MaxBatch.
	Batch int
	// ReadBuffer and WriteBuffer are the socket buffer sizes asked for in
	// bytes, zero: DefaultReadBuffer and DefaultWriteBuffer; negative:
	// the socket's are left alone. The kernel caps them at
	// net.core.rmem_max and wmem_max; Conn.Buffers reports what was got.
	ReadBuffer, WriteBuffer int
	// NoGSO turns UDP segmentation offload off: WriteBatch then passes
	// every datagram through the IP stack on its own. By default (Linux
	// ≥ 4.18) a run of datagrams of one size to one destination is sent
	// as one segmented write, and a socket whose path refuses it falls
	// back for good.
	NoGSO bool
}

// Message is one datagram of a batch.
type Message struct {
	// Buf holds the datagram: ReadBatch reads into Buf (its length is the
	// most it reads); WriteBatch sends Buf.
	Buf []byte
	// N is the datagram's length after ReadBatch (Buf[:N]); a datagram
	// longer than Buf is truncated and N is len(Buf).
	N int
	// Addr is the sender after ReadBatch, the destination for WriteBatch.
	Addr netip.AddrPort
}

// Conn batches the reads and writes of one UDP socket.
type Conn struct {
	uc    *net.UDPConn
	batch int
	v6    bool // an AF_INET6 socket: IPv4 destinations are written v4-mapped
	noGSO bool
	sys   *sysConn
}

// New wraps uc (which the caller keeps and closes) and sizes its buffers.
// A buffer the kernel will not size is not an error: Buffers reports it.
func New(uc *net.UDPConn, cfg Config) (*Conn, error) {
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Batch < 1 || cfg.Batch > MaxBatch {
		return nil, fmt.Errorf("udpio: batch %d out of [1, %d]: %w", cfg.Batch, MaxBatch, ErrConfig)
	}
	if cfg.ReadBuffer == 0 {
		cfg.ReadBuffer = DefaultReadBuffer
	}
	if cfg.WriteBuffer == 0 {
		cfg.WriteBuffer = DefaultWriteBuffer
	}
	if cfg.ReadBuffer > 0 {
		_ = uc.SetReadBuffer(cfg.ReadBuffer)
	}
	if cfg.WriteBuffer > 0 {
		_ = uc.SetWriteBuffer(cfg.WriteBuffer)
	}
	c := &Conn{uc: uc, batch: cfg.Batch, noGSO: cfg.NoGSO}
	la, ok := uc.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("udpio: socket has no UDP address: %w", ErrConfig)
	}
	c.v6 = la.IP.To4() == nil // newSysConn asks the kernel where it can
	s, err := newSysConn(c)
	if err != nil {
		return nil, err
	}
	c.sys = s
	return c, nil
}

// Batch is the most datagrams one call moves.
func (c *Conn) Batch() int { return c.batch }

// Buffers returns the socket's receive and send buffer sizes as the
// kernel reports them (Linux doubles what it grants), or 0 where unknown.
func (c *Conn) Buffers() (read, write int) { return c.sys.buffers() }

// GSO reports whether WriteBatch uses UDP segmentation offload now.
// Only the writing goroutine may call it.
func (c *Conn) GSO() bool { return c.sys.gsoOn() }

// ReadBatch blocks until at least one datagram arrives, then fills as many
// of ms (at most Batch) as are ready and returns how many. It returns the
// socket's error (net.ErrClosed after Close, a timeout after a deadline).
func (c *Conn) ReadBatch(ms []Message) (int, error) {
	if len(ms) > c.batch {
		ms = ms[:c.batch]
	}
	return c.sys.readBatch(ms)
}

// WriteBatch sends every message of ms, in calls of at most Batch, and
// returns how many were sent. A datagram the kernel refuses (e.g. an
// unreachable destination) is skipped and counted as sent: UDP promises no
// delivery. It stops at the first error that is the socket's.
func (c *Conn) WriteBatch(ms []Message) (int, error) {
	done := 0
	for done < len(ms) {
		end := min(len(ms), done+c.batch)
		n, err := c.sys.writeBatch(ms[done:end])
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// dest returns a as the socket's family wants it.
func (c *Conn) dest(a netip.AddrPort) netip.AddrPort {
	ip := a.Addr()
	if c.v6 && ip.Is4() {
		return netip.AddrPortFrom(netip.AddrFrom16(ip.As16()), a.Port())
	}
	if !c.v6 && ip.Is4In6() {
		return netip.AddrPortFrom(ip.Unmap(), a.Port())
	}
	return a
}
