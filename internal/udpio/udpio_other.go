//go:build !linux

package udpio

import "fmt"

// sysConn is the portable implementation: one datagram per call.
type sysConn struct{ c *Conn }

func newSysConn(c *Conn) (*sysConn, error) { return &sysConn{c: c}, nil }

func (s *sysConn) readBatch(ms []Message) (int, error) {
	if len(ms) == 0 || len(ms[0].Buf) == 0 {
		return 0, fmt.Errorf("udpio: message 0 has no buffer: %w", ErrConfig)
	}
	n, ap, err := s.c.uc.ReadFromUDPAddrPort(ms[0].Buf)
	if err != nil {
		return 0, err
	}
	ms[0].N, ms[0].Addr = n, ap
	return 1, nil
}

func (s *sysConn) writeBatch(ms []Message) (int, error) {
	for i := range ms {
		if _, err := s.c.uc.WriteToUDPAddrPort(ms[i].Buf, s.c.dest(ms[i].Addr)); err != nil {
			return i, err
		}
	}
	return len(ms), nil
}

func (s *sysConn) buffers() (read, write int) { return 0, 0 }

func (s *sysConn) gsoOn() bool { return false }
