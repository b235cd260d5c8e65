package rooms

import (
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// FuzzUDPDispatch feeds arbitrary datagrams from the node's address to a
// socket with one live session and one waiting handshake: nothing panics,
// and only what opens under the session's key reaches it. The seeds are a
// real unreliable FRAME on either channel, its bare header, a
// PATH_CHALLENGE (answered: the answer is queued) and a short one, and a
// handshake's first bytes.
func FuzzUDPDispatch(f *testing.F) {
	var key [32]byte
	node, _ := sealed.NewSealer(key[:], 7)
	frame, _ := roomwire.Append(nil, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	d, _ := node.Seal(nil, append([]byte{roomudp.ChannelMessage}, frame...))
	f.Add(d)
	f.Add(append([]byte(nil), d[:sealed.HeaderSize]...))
	d, _ = node.Seal(nil, roomudp.AppendFrame([]byte{roomudp.ChannelFrame}, 9, frame))
	f.Add(d)
	d, _ = node.Seal(nil, []byte{roomudp.ChannelPathChallenge, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(d)
	d, _ = node.Seal(nil, []byte{roomudp.ChannelPathChallenge, 1, 2, 3})
	f.Add(d)
	f.Add([]byte{roomudp.KindHandshake, 0, 0})
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &UDPSocket{maxQ: 1 << 16, wake: make(chan struct{}, 1),
			routes: make(map[routeKey]*udpConn), pending: make(map[netip.AddrPort][]*hsWait)}
		open, _ := sealed.NewOpener(key[:], 7)
		seal, _ := sealed.NewSealer(key[:], 7)
		hsOpen, _ := sealed.NewOpener(key[:], roomudp.HandshakeKeyID)
		c := &udpConn{sock: s, addr: addr, conv: 7, opener: open, sealer: seal, mtu: roomudp.DefaultMTU, now: time.Now,
			wake: make(chan struct{}, 1), doneCh: make(chan struct{})}
		s.routes[routeKey{addr, 7}] = c
		w := &hsWait{opener: hsOpen, reply: make(chan []byte, 1)}
		s.pending[addr] = []*hsWait{w}
		// c has no KCP conversation: a datagram on channel 0 would need
		// one, and only the key's holder can seal one that opens.
		s.dispatch(addr, append([]byte(nil), b...))
	})
}
