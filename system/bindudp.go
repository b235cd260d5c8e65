package system

import (
	"fmt"
	"net"
)

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
