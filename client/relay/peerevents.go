package relay

import "github.com/switchboardgg/switchboard/protocol/relaywire"

// Host peer events, Switchboard's messages outside Unity's type range
// (docs/protocol/relay.md, "Host peer events"):
//
//	PEERS_SUBSCRIBE 0x80  DA 72 00 80 | sender's allocation id (16)            20 bytes, host → relay
//	PEER_EVENT      0x81  DA 72 00 81 | event u8 | peer allocation id (16)     21 bytes, relay → host
//
// event: 0 subscribed (the ack; the id is the host's own), 1 connected,
// 2 disconnected. After a SUBSCRIBE the relay sends the ack, then
// "connected" for each peer connected at that moment; afterwards one
// event per change. Best effort over UDP: the Conn repeats SUBSCRIBE until
// acked and with every keep-alive, and dedups against its peer set. A
// relay without them drops 0x80 unanswered; the host then learns of a
// peer from its first RELAY and of its leaving from DISCONNECT.
const (
	typePeersSubscribe relaywire.Type = 0x80
	typePeerEvent      relaywire.Type = 0x81

	peersSubscribeSize = relaywire.HeaderSize + relaywire.AllocationIDSize     // 20
	peerEventSize      = relaywire.HeaderSize + 1 + relaywire.AllocationIDSize // 21

	peerEventSubscribed   = 0
	peerEventConnected    = 1
	peerEventDisconnected = 2
)

// appendPeersSubscribe appends a PEERS_SUBSCRIBE from id to b.
func appendPeersSubscribe(b []byte, id relaywire.AllocationID) []byte {
	b = append(b, relaywire.Signature0, relaywire.Signature1, relaywire.Version, byte(typePeersSubscribe))
	return append(b, id[:]...)
}

// parsePeerEvent decodes a PEER_EVENT; ok is false when b is not one (of
// the right size, with a known event).
func parsePeerEvent(b []byte) (event byte, peer relaywire.AllocationID, ok bool) {
	if len(b) != peerEventSize || b[0] != relaywire.Signature0 || b[1] != relaywire.Signature1 ||
		b[2] != relaywire.Version || b[3] != byte(typePeerEvent) || b[4] > peerEventDisconnected {
		return 0, peer, false
	}
	copy(peer[:], b[5:])
	return b[4], peer, true
}
