package system

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// hubPortTries is how many free TCP ports bindHub tries, when the hub's
// port is 0, for one whose UDP twin is free too.
const hubPortTries = 8

// bindUDP binds the UDP socket of the named ready field at addr, for
// bindListeners: before any role starts, so that a port in use fails
// Start with the role's name and address and nothing half-started. Close
// closes it, also when the role that would have served it failed to
// start.
func (s *System) bindUDP(name, addr string) error {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return fmt.Errorf("system: %w: %s address %q: %v", ErrConfig, name, addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("system: %s listener: %w", name, err)
	}
	s.pcs = append(s.pcs, pc)
	s.bound[name] = boundListener{pc: pc, addr: pc.LocalAddr().String()}
	return nil
}

// boundUDP returns the UDP socket bindUDP bound for name, or nil.
func (s *System) boundUDP(name string) *net.UDPConn {
	pc, _ := s.bound[name].pc.(*net.UDPConn)
	return pc
}

// bindHub binds the hub's TLS listener (its own TLS: see startHub) and,
// unless p2p.Config.DisableUDP, its UDP port: the TLS port's number
// (issue 11). When the configured port is 0 and the UDP twin of the TCP
// port the kernel chose is taken, it tries another TCP port, up to
// hubPortTries in all.
func (s *System) bindHub() error {
	c := &s.cfg
	addr := c.Hub.Addr
	if addr == "" {
		addr = DefaultListenAddr
	}
	_, port, _ := net.SplitHostPort(addr)
	for try := 1; ; try++ {
		if err := s.bindTCP("hub", addr, c.Hub.Listener, false); err != nil {
			return err
		}
		if c.Hub.Hub.DisableUDP {
			return nil
		}
		err := s.bindUDP("hub_udp", s.bound["hub"].addr)
		if err == nil || port != "0" || c.Hub.Listener != nil || try == hubPortTries || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		_ = s.bound["hub"].ln.Close() // and another port; Close closes it again, harmlessly
	}
}
