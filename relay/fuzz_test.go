package relay_test

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// FuzzHandle feeds arbitrary datagrams, from the bound host's address and
// from a stranger's, to a node with a live session: nothing panics, and
// every datagram is handled (none blocks the reader).
func FuzzHandle(f *testing.F) {
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		f.Fatal(err)
	}
	s, err := relay.New(relay.Config{Keys: keys, NodeID: nodeID, BootEpoch: epoch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	defer pc.Close()
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	defer sink.Close()
	handle := s.HandleUDPForTest(pc)
	hostAddr := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	joinAddr := netip.AddrPortFrom(hostAddr.Addr(), hostAddr.Port()+1)
	stranger := netip.MustParseAddrPort("127.0.0.1:9")

	mint := func(host [16]byte) alloc {
		c := tokens.RelayConnection{HostAllocationID: host, NodeID: nodeID, BootEpoch: epoch,
			Issued: time.Now(), Expires: time.Now().Add(time.Hour), MaxConnections: 2}
		c.AllocationID[0], c.AllocationID[15] = byte(len(host)), host[0]+1
		blob, _ := keys.Seal(c)
		k, _ := keys.AllocationKey(1, c.AllocationID)
		return alloc{id: c.AllocationID, blob: blob, key: k[:]}
	}
	h := mint([16]byte{})
	j := mint(h.id)
	handle(hostAddr, mBind(0, h.blob, h.key))
	handle(joinAddr, mBind(0, j.blob, j.key))
	handle(joinAddr, mConnect(j.id, h.blob))
	if st, ok := s.Allocation(h.id); !ok || st.Peers != 1 {
		f.Fatalf("setup: host %+v, %v", st, ok)
	}

	for _, seed := range [][]byte{
		mBind(1, h.blob, h.key), mPing(h.id), mConnect(j.id, h.blob), mRelay(h.id, j.id, []byte("x")),
		mFromTo(tDisconnect, h.id, j.id), hdr(tClose), append(hdr(tClose), h.id[:]...), mError(h.id, 3),
		{0xDA, 0x72, 0x00}, {0x59, 0, 12}, mSubscribe(h.id), mSubscribe(j.id), mPeerEvent(evConnected, j.id),
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, fromStranger bool) {
		from := hostAddr
		if fromStranger {
			from = stranger
		}
		handle(from, b) // a CLOSE may release the session; a panic fails
	})
}

// FuzzDTLSCookies: the cookie parsers run on any datagram a source sends
// (and on pion's own writes); they never panic, and a cookie found lies
// inside the datagram.
func FuzzDTLSCookies(f *testing.F) {
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 35, 3, 0, 0, 23, 0, 0, 0, 0, 0, 0, 0, 23, 0xfe, 0xff, 20})
	f.Add(append([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 1}, make([]byte, 60)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		hvr, hvrOK, hello, helloOK := relay.DTLSCookiesForTest(b)
		if hvrOK && len(hvr) > len(b) || helloOK && len(hello) > len(b) {
			t.Fatalf("a cookie longer than its datagram")
		}
	})
}
