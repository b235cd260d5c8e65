//go:build linux

package udpio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysConn is the Linux implementation: recvmmsg and sendmmsg driven
// through syscall.RawConn, with every header, iovec and sockaddr allocated
// once. The closures given to RawConn are made once too, reading their
// arguments from the struct, so a call allocates nothing.
type sysConn struct {
	c  *Conn
	rc syscall.RawConn

	// reader's, used by one ReadBatch at a time
	rh    []unix.Mmsghdr
	riov  []unix.Iovec
	rname []unix.RawSockaddrInet6
	rn    int
	rerr  syscall.Errno
	rfn   func(fd uintptr) bool

	// writer's, used by one WriteBatch at a time
	wh     []unix.Mmsghdr
	wiov   []unix.Iovec
	wname  []unix.RawSockaddrInet6
	wctl   []byte // a UDP_SEGMENT control message per header
	wfirst []int  // per header: its first message
	wcount []int  // per header: its messages
	gso    bool   // segmentation offload works on this socket, as far as known
	woff   int    // first header of this sendmmsg
	wn     int
	werr   syscall.Errno
	wfn    func(fd uintptr) bool
}

func newSysConn(c *Conn) (*sysConn, error) {
	rc, err := c.uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udpio: raw socket: %w", err)
	}
	s := &sysConn{
		c: c, rc: rc,
		rh: make([]unix.Mmsghdr, c.batch), riov: make([]unix.Iovec, c.batch), rname: make([]unix.RawSockaddrInet6, c.batch),
		wh: make([]unix.Mmsghdr, c.batch), wiov: make([]unix.Iovec, c.batch), wname: make([]unix.RawSockaddrInet6, c.batch),
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		sa, serr = unix.Getsockname(int(fd))
		_, c.v6 = sa.(*unix.SockaddrInet6)
	}); err != nil || serr != nil {
		return nil, fmt.Errorf("udpio: socket address: %w", errors.Join(err, serr))
	}
	s.wctl = make([]byte, c.batch*gsoCmsgSpace)
	s.wfirst, s.wcount = make([]int, c.batch), make([]int, c.batch)
	if !c.noGSO {
		// UDP_SEGMENT as a socket option tells whether the kernel knows it.
		_ = rc.Control(func(fd uintptr) {
			s.gso = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, 0) == nil
		})
	}
	for i := range s.rh {
		s.rh[i].Hdr.Iov = &s.riov[i]
		s.rh[i].Hdr.SetIovlen(1)
		s.rh[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.rname[i]))
		s.wh[i].Hdr.Iov = &s.wiov[i]
		s.wh[i].Hdr.SetIovlen(1)
		s.wh[i].Hdr.Name = (*byte)(unsafe.Pointer(&s.wname[i]))
	}
	// Both calls are made with RawSyscall6, which skips the runtime's
	// entersyscall/exitsyscall. The socket is non-blocking and MSG_DONTWAIT
	// is set, so a call never sleeps: it costs only the kernel's work on at
	// most one batch (a sendmmsg of a few hundred datagrams takes a few
	// hundred microseconds on loopback). Through Syscall6, each call of more
	// than sysmon's 20 µs lets sysmon hand the P to another thread, and each
	// call wakes a sleeping sysmon: at 1,000 players that thread switching
	// was 16 % of the UDP node's CPU (docs/benchmarks.md).
	s.rfn = func(fd uintptr) bool {
		n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.rh[0])), uintptr(s.rn), unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false // wait for the poller
		}
		s.rn, s.rerr = int(n), e
		return true
	}
	s.wfn = func(fd uintptr) bool {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.wh[s.woff])), uintptr(s.wn), unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false
		}
		s.wn, s.werr = int(n), e
		return true
	}
	return s, nil
}

func (s *sysConn) readBatch(ms []Message) (int, error) {
	for i := range ms {
		if len(ms[i].Buf) == 0 {
			return 0, fmt.Errorf("udpio: message %d has no buffer: %w", i, ErrConfig)
		}
		s.riov[i].Base = &ms[i].Buf[0]
		s.riov[i].SetLen(len(ms[i].Buf))
		s.rh[i].Hdr.Namelen = unix.SizeofSockaddrInet6
		s.rh[i].Hdr.Flags = 0
		s.rh[i].Len = 0
	}
	s.rn, s.rerr = len(ms), 0
	if err := s.rc.Read(s.rfn); err != nil {
		return 0, err
	}
	if s.rerr != 0 {
		return 0, fmt.Errorf("udpio: recvmmsg: %w", s.rerr)
	}
	n := s.rn
	for i := range n {
		ms[i].N = min(int(s.rh[i].Len), len(ms[i].Buf))
		ms[i].Addr = parseSockaddr(&s.rname[i])
		s.riov[i].Base = nil // let the buffer go
	}
	return n, nil
}

// UDP generic segmentation offload (Linux ≥ 4.18): consecutive datagrams
// of one size to one destination leave as one sendmmsg entry whose iovecs
// are the datagrams and whose UDP_SEGMENT control message gives the size;
// the kernel cuts them apart again, once per run instead of once per
// datagram through the IP stack. The receiver sees ordinary datagrams.
const (
	maxGSOSegments = 64     // UDP_MAX_SEGMENTS of older kernels
	maxGSOBytes    = 65_000 // a run's bytes, under the 65,507 of one IPv4 UDP send
)

var gsoCmsgSpace = unix.CmsgSpace(2)

func (s *sysConn) writeBatch(ms []Message) (int, error) {
	nh := 0 // headers
	for i := 0; i < len(ms); {
		k := 1
		seg := len(ms[i].Buf)
		if s.gso && seg > 0 {
			for i+k < len(ms) && k < maxGSOSegments && ms[i+k].Addr == ms[i].Addr &&
				len(ms[i+k].Buf) == seg && (k+1)*seg <= maxGSOBytes {
				k++
			}
		}
		for j := i; j < i+k; j++ {
			s.wiov[j].Base = nil
			if len(ms[j].Buf) > 0 {
				s.wiov[j].Base = &ms[j].Buf[0]
			}
			s.wiov[j].SetLen(len(ms[j].Buf))
		}
		h := &s.wh[nh].Hdr
		h.Iov = &s.wiov[i]
		h.SetIovlen(k)
		h.Name = (*byte)(unsafe.Pointer(&s.wname[nh]))
		h.Namelen = putSockaddr(&s.wname[nh], s.c.dest(ms[i].Addr))
		if k > 1 {
			ctl := s.wctl[nh*gsoCmsgSpace : (nh+1)*gsoCmsgSpace]
			cm := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
			cm.Level, cm.Type = unix.SOL_UDP, unix.UDP_SEGMENT
			cm.SetLen(unix.CmsgLen(2))
			*(*uint16)(unsafe.Pointer(&ctl[unix.CmsgLen(0)])) = uint16(seg)
			h.Control = &ctl[0]
			h.SetControllen(gsoCmsgSpace)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
		s.wfirst[nh], s.wcount[nh] = i, k
		nh++
		i += k
	}
	defer func() {
		for i := range ms {
			s.wiov[i].Base = nil // let the buffers go
		}
	}()
	sentH, sent := 0, 0
	for sentH < nh {
		s.woff, s.wn, s.werr = sentH, nh-sentH, 0
		if err := s.rc.Write(s.wfn); err != nil {
			return sent, err
		}
		switch e := s.werr; {
		case e == 0:
			for h := sentH; h < sentH+s.wn; h++ {
				sent += s.wcount[h]
			}
			sentH += s.wn
		case s.wcount[sentH] > 1 && (e == unix.EIO || e == unix.EINVAL || e == unix.EOPNOTSUPP || e == unix.ENOPROTOOPT || e == unix.EMSGSIZE):
			// The path refuses segmentation offload: send the rest
			// datagram by datagram, from now on.
			s.gso = false
			n, err := s.writeBatch(ms[s.wfirst[sentH]:])
			return sent + n, err
		case e == unix.ECONNREFUSED || e == unix.EHOSTUNREACH || e == unix.ENETUNREACH ||
			e == unix.EPERM || e == unix.EINVAL || e == unix.EDESTADDRREQ || e == unix.EMSGSIZE || e == unix.EAFNOSUPPORT:
			sent += s.wcount[sentH] // these datagrams cannot go; skip them
			sentH++
		default:
			return sent, fmt.Errorf("udpio: sendmmsg: %w", e)
		}
	}
	return sent, nil
}

func (s *sysConn) gsoOn() bool { return s.gso }

func parseSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	case unix.AF_INET6:
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port)
	}
	return netip.AddrPort{}
}

func putSockaddr(sa *unix.RawSockaddrInet6, a netip.AddrPort) uint32 {
	ip := a.Addr()
	if ip.Is4() {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ip.As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], a.Port())
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ip.As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], a.Port())
	return unix.SizeofSockaddrInet6
}

func (s *sysConn) buffers() (read, write int) {
	_ = s.rc.Control(func(fd uintptr) {
		read, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		write, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	})
	return read, write
}
