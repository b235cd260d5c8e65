package p2p

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// BreakConnection closes the socket under the peer, as a network failure
// would.
func (p *Peer) BreakConnection() {
	if c := p.curConn(); c != nil {
		_ = c.Close()
	}
}

// The UDP hooks, for the tests of package p2p_test.

// UDPLocal returns the UDP socket's bound address.
func (p *Peer) UDPLocal() netip.AddrPort { return p.udpLocal() }

// UDPConnPort returns the UDP socket's port, through udpConn.
func (p *Peer) UDPConnPort() uint16 {
	return p.udpConn().LocalAddr().(*net.UDPAddr).AddrPort().Port()
}

// Candidates returns the local candidates REGISTER announces.
func (p *Peer) Candidates() []netip.AddrPort { return p.candidates() }

// InstallDirectUDP installs a direct UDP path to peer under a pair key
// (as the punch code will) and returns a function that takes it down
// (up=false) and one that removes it.
func (p *Peer) InstallDirectUDP(peer string, keyID uint32, secret []byte, remote netip.AddrPort) (down, remove func(), err error) {
	side, err := p2pseal.PairSide(secret, keyID, p.id, peer)
	if err != nil {
		return nil, nil, err
	}
	d := &directPath{peer: peer, path: PathDirectUDP, keyID: keyID, side: side}
	d.setRemote(remote)
	d.up.Store(true)
	p.setDirectPath(d)
	if p.directPath(peer) != d {
		return nil, nil, errors.New("not installed")
	}
	return func() { d.up.Store(false) }, func() { p.clearDirectPath(d) }, nil
}

// Received is a datagram a test handler saw.
type Received struct {
	From string
	Path Path
	Rest []byte
}

// HandleDatagrams registers a handler for kind that copies what it gets
// to ch (dropping when ch is full).
func (p *Peer) HandleDatagrams(kind p2pwire.Kind, ch chan<- Received) {
	p.handleDatagrams(kind, func(d *inDatagram) {
		select {
		case ch <- Received{From: d.From, Path: d.Path, Rest: bytes.Clone(d.Rest)}:
		default:
		}
	})
}

// SendDatagram is sendDatagram.
func (p *Peer) SendDatagram(to string, kind p2pwire.Kind, rest []byte) (Path, error) {
	return p.sendDatagram(to, kind, rest)
}

// SealTo seals plain with a throwaway key and sends it to addr (the
// receiver must drop it: unknown key).
func (p *Peer) SealTo(addr netip.AddrPort, plain []byte) error {
	side, err := p2pseal.PeerSide(make([]byte, 32), 0x7fff0001)
	if err != nil {
		return err
	}
	return p.sealTo(side.Seal, addr, plain)
}

// ExtensionStarted counts the peers the test extension saw start, and
// stopped those it saw stop.
var ExtensionStarted, ExtensionStopped atomic.Int64

func init() {
	extensions = append(extensions, func(p *Peer) func() {
		ExtensionStarted.Add(1)
		return func() { ExtensionStopped.Add(1) }
	})
}

// SetCandidateSource makes fn the keeper's list of local candidates (the
// machine's interfaces cannot be changed in a test).
func (p *Peer) SetCandidateSource(fn func() []netip.AddrPort) { p.udp.localCands.Store(&fn) }

// SendResponse sends a RESPONSE with message id id to peer to, whether or
// not to asked anything: what a hostile peer can do.
func (p *Peer) SendResponse(ctx context.Context, to string, id uint64, env Envelope) error {
	return p.send(ctx, p2pwire.KindResponse, to, false, id, env)
}
