package relaywire

import "testing"

// TestLayoutsAddUp: each type's fields add up to its size, so that checkSize
// always names a field (its final panic is unreachable), and the error table
// has one entry per field.
func TestLayoutsAddUp(t *testing.T) {
	sizes := map[Type]int{
		TypeBind: BindSize, TypeBindReceived: BindReceivedSize, TypePing: PingSize,
		TypeConnectRequest: ConnectRequestSize, TypeAccepted: AcceptedSize, TypeRejected: RejectedSize,
		TypeDisconnect: DisconnectSize, TypeRelay: RelayHeaderSize, TypeClose: CloseWithIDSize, TypeError: ErrorSize,
		TypePeersSubscribe: PeersSubscribeSize, TypePeerEvent: PeerEventSize,
	}
	for typ, want := range sizes {
		got := HeaderSize
		for _, f := range bodies[typ] {
			got += f.size
		}
		if got != want {
			t.Errorf("%s: fields add up to %d bytes, want %d", typ, got, want)
		}
		e := errTable[typ]
		if e == nil || len(e.truncated) != len(bodies[typ]) {
			t.Fatalf("%s: error table %+v", typ, e)
		}
		for i, f := range bodies[typ] {
			if fe := e.truncated[i]; fe.Type != typ || fe.Field != f.name || fe.Problem != ProblemTruncated {
				t.Errorf("%s: truncated[%d] = %+v", typ, i, fe)
			}
		}
	}
	for i := range 256 {
		if got, want := errTable[i] != nil, Type(i).Known() || Type(i) == TypeNone; got != want {
			t.Errorf("type %d: error table entry %v, want %v", i, got, want)
		}
	}
}
