package relaywire_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// Run with: go test -run='^$' -bench=. -benchmem ./protocol/relaywire

var (
	benchHost = relaywire.AllocationID{0xf2, 0x6e, 0xd6, 0xcc, 0x6b, 0xa7, 0x11, 0xeb, 0xb7, 0xe1, 0x4f, 0x04, 0x36, 0xc8, 0xd4, 0x58}
	benchPeer = relaywire.AllocationID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77}
)

// benchRelay is a RELAY as a game sends it: a 1,200-byte payload.
func benchRelay(tb testing.TB) []byte {
	tb.Helper()
	b, err := (&relaywire.Relay{From: benchPeer, To: benchHost, Data: seq(1200, 0)}).AppendTo(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func benchBind(tb testing.TB) (*relaywire.Bind, *relaywire.Key, []byte) {
	tb.Helper()
	key := relaywire.Key(seq(64, 0))
	m, err := relaywire.NewBind(23, seq(200, 1), &key)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := m.AppendTo(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return m, &key, b
}

// BenchmarkRelayUnmarshal is the relay's per-datagram decode.
func BenchmarkRelayUnmarshal(b *testing.B) {
	data := benchRelay(b)
	var m relaywire.Relay
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPeekRelay is the relay's dispatch on the header.
func BenchmarkPeekRelay(b *testing.B) {
	data := benchRelay(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := relaywire.Peek(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelayUnmarshalGarbage is a flood of RELAYs whose length lies.
func BenchmarkRelayUnmarshalGarbage(b *testing.B) {
	data := benchRelay(b)
	data[36] ^= 0x40
	var m relaywire.Relay
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err == nil {
			b.Fatal("garbage accepted")
		}
	}
}

// BenchmarkRelayAppend is a client's (and the relay's own messages') encode.
func BenchmarkRelayAppend(b *testing.B) {
	m := &relaywire.Relay{From: benchPeer, To: benchHost, Data: seq(1200, 0)}
	buf := make([]byte, 0, 1500)
	b.SetBytes(int64(relaywire.RelayHeaderSize + len(m.Data)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = m.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBindVerify is a relay checking a BIND: decode and HMAC.
func BenchmarkBindVerify(b *testing.B) {
	_, key, data := benchBind(b)
	var m relaywire.Bind
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err != nil || !m.Verify(key) {
			b.Fatal("bad BIND")
		}
	}
}

// BenchmarkBindVerifyCryptoHMAC is the same check with crypto/hmac, for
// comparison with the allocation-free HMAC.
func BenchmarkBindVerifyCryptoHMAC(b *testing.B) {
	_, key, data := benchBind(b)
	b.ReportAllocs()
	for b.Loop() {
		mac := hmac.New(sha256.New, key[:])
		mac.Write(data[:relaywire.BindSignedSize])
		if !hmac.Equal(mac.Sum(nil), data[relaywire.BindSignedSize:]) {
			b.Fatal("bad BIND")
		}
	}
}

// TestHotPathsDoNotAllocate: what a relay does per datagram — peek, decode
// a RELAY, reject garbage, check a BIND, answer with a fixed-size message —
// allocates nothing.
func TestHotPathsDoNotAllocate(t *testing.T) {
	relay := benchRelay(t)
	garbage := append([]byte(nil), relay...)
	garbage[37] ^= 1
	_, key, bind := benchBind(t)
	ping, _ := (&relaywire.Ping{From: benchPeer, Sequence: 1}).AppendTo(nil)
	notDA := append([]byte{0x59}, relay[1:]...)
	unknown := []byte{0xDA, 0x72, 0, 7}

	buf := make([]byte, 0, 2048)
	var r relaywire.Relay
	var bm relaywire.Bind
	var pm relaywire.Ping
	tests := []struct {
		name string
		fn   func() error
	}{
		{"peek", func() error { _, err := relaywire.Peek(relay); return err }},
		{"decode RELAY into a reused value", func() error { return r.Unmarshal(relay) }},
		{"reject a RELAY with a wrong length", func() error { return want(r.Unmarshal(garbage) != nil) }},
		{"reject a datagram that is not DA 72", func() error { _, err := relaywire.Peek(notDA); return want(err != nil) }},
		{"reject an unknown type", func() error { _, err := relaywire.Peek(unknown); return want(err != nil) }},
		{"reject a short datagram", func() error { return want(r.Unmarshal(relay[:10]) != nil) }},
		{"decode and verify BIND", func() error { return want(bm.Unmarshal(bind) == nil && bm.Verify(key)) }},
		{"decode PING", func() error { return pm.Unmarshal(ping) }},
		{"encode RELAY", func() (err error) { buf, err = r.AppendTo(buf[:0]); return err }},
		{"encode BIND_RECEIVED", func() (err error) { buf, err = (&relaywire.BindReceived{}).AppendTo(buf[:0]); return err }},
		{"encode ACCEPTED", func() (err error) {
			buf, err = (&relaywire.Accepted{From: benchHost, To: benchPeer}).AppendTo(buf[:0])
			return err
		}},
		{"encode ERROR", func() (err error) {
			buf, err = (&relaywire.Error{AllocationID: benchPeer, Code: relaywire.CodeClientMismatch}).AppendTo(buf[:0])
			return err
		}},
		{"echo PING", func() (err error) { buf, err = pm.AppendTo(buf[:0]); return err }},
		{"encode PEER_EVENT", func() (err error) {
			buf, err = (&relaywire.PeerEvent{Event: relaywire.PeerConnected, Peer: benchPeer}).AppendTo(buf[:0])
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); err != nil {
				t.Fatal(err)
			}
			if n := testing.AllocsPerRun(100, func() { _ = tc.fn() }); n != 0 {
				t.Errorf("got %v allocations per run, want 0", n)
			}
		})
	}
}

var errNotAsExpected = &relaywire.FieldError{Field: "test", Problem: "not as expected"}

func want(ok bool) error {
	if !ok {
		return errNotAsExpected
	}
	return nil
}
