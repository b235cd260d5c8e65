package relaywire_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// TestSizes pins the sizes to the reference's layouts (§1.4, §8): the
// constants, and what each encoder writes.
func TestSizes(t *testing.T) {
	key := relaywire.Key{}
	bind, err := relaywire.NewBind(0, nil, &key)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := relaywire.NewConnectRequest(relaywire.AllocationID{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		m         relaywire.Message
		constant  int
		reference int
	}{
		{bind, relaywire.BindSize, 295},
		{&relaywire.BindReceived{}, relaywire.BindReceivedSize, 4},
		{&relaywire.Ping{}, relaywire.PingSize, 22},
		{cr, relaywire.ConnectRequestSize, 276},
		{&relaywire.Accepted{}, relaywire.AcceptedSize, 36},
		{&relaywire.Rejected{}, relaywire.RejectedSize, 36},
		{&relaywire.Disconnect{}, relaywire.DisconnectSize, 36},
		{&relaywire.Relay{}, relaywire.RelayHeaderSize, 38},
		{&relaywire.Relay{Data: make([]byte, 1434)}, relaywire.RelayHeaderSize + 1434, 1472},
		{&relaywire.Close{}, relaywire.CloseSize, 4},
		{&relaywire.Close{HasAllocationID: true}, relaywire.CloseWithIDSize, 20},
		{&relaywire.Error{}, relaywire.ErrorSize, 21},
		{&relaywire.PeersSubscribe{}, relaywire.PeersSubscribeSize, 20},
		{&relaywire.PeerEvent{}, relaywire.PeerEventSize, 21},
	}
	for _, tc := range tests {
		b, err := tc.m.AppendTo(nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.m.Type(), err)
		}
		if len(b) != tc.reference || tc.constant != tc.reference {
			t.Errorf("%s: encoded %d bytes, constant %d, want %d", tc.m.Type(), len(b), tc.constant, tc.reference)
		}
		if !bytes.Equal(b[:4], []byte{0xDA, 0x72, 0x00, byte(tc.m.Type())}) {
			t.Errorf("%s: header %x", tc.m.Type(), b[:4])
		}
	}
	if relaywire.BindSignedSize != 263 || relaywire.KeySize != 64 || relaywire.HMACSize != 32 ||
		relaywire.ConnectionDataSize != 255 || relaywire.AllocationIDSize != 16 {
		t.Error("field sizes differ from the reference")
	}
}

func TestEncodersRefuseWhatDecodersReject(t *testing.T) {
	prefix := []byte{1, 2, 3}
	padded := relaywire.ConnectionData{69: 1}
	tests := []struct {
		name           string
		m              relaywire.Message
		field, problem string
	}{
		{"BIND accept mode 1", &relaywire.Bind{AcceptMode: 1}, "accept_mode", relaywire.ProblemBadAcceptMode},
		{"BIND data after its length", &relaywire.Bind{ConnectionDataLength: 69, ConnectionData: padded}, "connection_data", relaywire.ProblemBadPadding},
		{"CONNECT_REQUEST data after its length", &relaywire.ConnectRequest{ToConnectionDataLength: 69, ToConnectionData: padded}, "to_connection_data", relaywire.ProblemBadPadding},
		{"PEER_EVENT event 3", &relaywire.PeerEvent{Event: 3}, "event", relaywire.ProblemBadEvent},
		{"RELAY over 65535 bytes", &relaywire.Relay{Data: make([]byte, relaywire.MaxRelayPayload+1)}, "data", relaywire.ProblemOverCap},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := relaywire.Append(prefix, tc.m)
			var fe *relaywire.FieldError
			if !errors.As(err, &fe) || fe.Type != tc.m.Type() || fe.Field != tc.field || fe.Problem != tc.problem {
				t.Fatalf("Append error %v, want %s %s %s", err, tc.m.Type(), tc.field, tc.problem)
			}
			if !bytes.Equal(b, prefix) {
				t.Errorf("Append returned %x with its error, want the buffer unchanged", b)
			}
		})
	}
	// The largest RELAY encodes and decodes.
	b, err := (&relaywire.Relay{Data: make([]byte, relaywire.MaxRelayPayload)}).AppendTo(nil)
	if err != nil || len(b) != relaywire.MaxMessageSize {
		t.Fatalf("largest RELAY: %d bytes, %v", len(b), err)
	}
	var r relaywire.Relay
	if err := r.Unmarshal(b); err != nil || len(r.Data) != relaywire.MaxRelayPayload {
		t.Fatalf("largest RELAY decodes to %d bytes, %v", len(r.Data), err)
	}
}

func TestBindHMACMatchesCryptoHMAC(t *testing.T) {
	for _, n := range []int{0, 1, 70, 254, 255} {
		key := relaywire.Key(seq(64, byte(n)))
		m, err := relaywire.NewBind(uint16(n*257), seq(n, 3), &key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		mac := hmac.New(sha256.New, key[:])
		mac.Write(b[:relaywire.BindSignedSize])
		if want := mac.Sum(nil); !bytes.Equal(m.HMAC[:], want) || !bytes.Equal(b[relaywire.BindSignedSize:], want) {
			t.Errorf("blob %d bytes: HMAC %x, crypto/hmac %x", n, m.HMAC, want)
		}
		if !m.Verify(&key) {
			t.Errorf("blob %d bytes: Verify = false", n)
		}
		if got := m.Blob(); len(got) != 255 || !bytes.Equal(got[:n], seq(n, 3)) {
			t.Errorf("Blob = %x", got)
		}
	}
}

func TestConstructorsCheckSizes(t *testing.T) {
	if _, err := relaywire.NewConnectionData(make([]byte, 256)); !errors.Is(err, relaywire.ErrConnectionDataTooLong) {
		t.Errorf("NewConnectionData(256 bytes) error %v, want ErrConnectionDataTooLong", err)
	}
	key := relaywire.Key{}
	if _, err := relaywire.NewBind(0, make([]byte, 256), &key); !errors.Is(err, relaywire.ErrConnectionDataTooLong) {
		t.Errorf("NewBind(256 bytes) error %v, want ErrConnectionDataTooLong", err)
	}
	if _, err := relaywire.NewConnectRequest(relaywire.AllocationID{}, make([]byte, 256)); !errors.Is(err, relaywire.ErrConnectionDataTooLong) {
		t.Errorf("NewConnectRequest(256 bytes) error %v, want ErrConnectionDataTooLong", err)
	}
	for _, n := range []int{0, 32, 63, 65} {
		if _, err := relaywire.NewKey(make([]byte, n)); !errors.Is(err, relaywire.ErrBadKey) {
			t.Errorf("NewKey(%d bytes) error %v, want ErrBadKey", n, err)
		}
	}
	k, err := relaywire.NewKey(seq(64, 9))
	if err != nil || !bytes.Equal(k[:], seq(64, 9)) {
		t.Errorf("NewKey(64 bytes) = %x, %v", k, err)
	}
}

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		code  relaywire.ErrorCode
		name  string
		fatal bool
	}{
		{relaywire.CodeInvalidVersion, "invalid_protocol_version", false},
		{relaywire.CodeTimedOut, "timed_out", true},
		{relaywire.CodeUnauthorized, "unauthorized", false},
		{relaywire.CodeClientMismatch, "allocation_id_client_mismatch", false},
		{relaywire.CodeNotFound, "allocation_id_not_found", true},
		{relaywire.CodeNotConnected, "not_connected", false},
		{relaywire.CodeSelfConnect, "self_connect_not_allowed", false},
		{7, "unknown", false},
		{255, "unknown", false},
	}
	for i, tc := range tests {
		if i < 7 && uint8(tc.code) != uint8(i) {
			t.Errorf("%s = %d, want %d", tc.name, tc.code, i)
		}
		if tc.code.String() != tc.name || tc.code.Fatal() != tc.fatal || tc.code.Known() != (i < 7) {
			t.Errorf("code %d: %q fatal %v known %v", tc.code, tc.code, tc.code.Fatal(), tc.code.Known())
		}
	}
	var err error = &relaywire.Error{Code: relaywire.CodeNotFound}
	var re *relaywire.Error
	if !errors.As(err, &re) || re.Code != relaywire.CodeNotFound || err.Error() != "relaywire: relay error 4 allocation_id_not_found" {
		t.Errorf("Error as error: %v", err)
	}
}

func TestTypes(t *testing.T) {
	want := map[relaywire.Type]string{0: "BIND", 1: "BIND_RECEIVED", 2: "PING", 3: "CONNECT_REQUEST",
		6: "ACCEPTED", 8: "REJECTED", 9: "DISCONNECT", 10: "RELAY", 11: "CLOSE", 12: "ERROR",
		0x80: "PEERS_SUBSCRIBE", 0x81: "PEER_EVENT"}
	for i := range 256 {
		typ := relaywire.Type(i)
		name, ok := want[typ]
		if typ.Known() != ok || ok && typ.String() != name {
			t.Errorf("type %d: Known %v String %q, want %v %q", i, typ.Known(), typ, ok, name)
		}
		if m := relaywire.New(typ); ok && (m == nil || m.Type() != typ) {
			t.Errorf("New(%d) = %T", i, m)
		}
	}
	if relaywire.Type(4).String() != "TYPE_4" || relaywire.TypeNone.Known() {
		t.Errorf("reserved type 4 prints %q; TypeNone known %v", relaywire.Type(4), relaywire.TypeNone.Known())
	}
}

func TestFieldErrorMessages(t *testing.T) {
	_, err := relaywire.Peek([]byte{0xDA, 0x72, 0x01, 0x0A})
	if err.Error() != "relaywire: header: version: bad_version" || !errors.Is(err, relaywire.ErrUnsupportedVersion) {
		t.Errorf("bad version: %v", err)
	}
	err = new(relaywire.Relay).Unmarshal([]byte{0xDA, 0x72, 0x00, 0x0A, 1})
	if err.Error() != "relaywire: RELAY: from_allocation_id: truncated" || errors.Is(err, relaywire.ErrUnsupportedVersion) {
		t.Errorf("short RELAY: %v", err)
	}
	// Failures are shared values: the same failure twice is the same error.
	err2 := new(relaywire.Relay).Unmarshal([]byte{0xDA, 0x72, 0x00, 0x0A, 2, 3})
	if err != err2 {
		t.Errorf("two identical failures gave distinct errors %p and %p", err, err2)
	}
}

func TestPeerEventKinds(t *testing.T) {
	tests := []struct {
		kind relaywire.PeerEventKind
		name string
	}{
		{relaywire.PeerSubscribed, "subscribed"}, {relaywire.PeerConnected, "connected"},
		{relaywire.PeerDisconnected, "disconnected"}, {3, "unknown"}, {255, "unknown"},
	}
	for i, tc := range tests {
		if i < 3 && uint8(tc.kind) != uint8(i) {
			t.Errorf("%s = %d, want %d", tc.name, tc.kind, i)
		}
		if tc.kind.String() != tc.name || tc.kind.Known() != (i < 3) {
			t.Errorf("event %d: %q known %v", tc.kind, tc.kind, tc.kind.Known())
		}
	}
}
