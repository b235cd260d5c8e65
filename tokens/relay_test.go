package tokens

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

func testKeyring(t *testing.T, keys ...RelayKey) *RelayKeyring {
	t.Helper()
	r, err := NewRelayKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sampleConn() RelayConnection {
	now := time.Unix(1_800_000_000, 0)
	return RelayConnection{
		AllocationID:     [16]byte{0xf2, 0x6e, 0xd6, 0xcc, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		HostAllocationID: [16]byte{1},
		NodeID:           strings.Repeat("n", RelayMaxNodeID),
		BootEpoch:        42,
		Issued:           now,
		Expires:          now.Add(6 * time.Hour),
		Region:           strings.Repeat("r", RelayMaxRegion),
		MaxConnections:   100,
		Options:          3,
		IdleTimeout:      30 * time.Second,
	}
}

func TestRelaySealOpen(t *testing.T) {
	k1 := RelayKey{ID: 1, Secret: bytes.Repeat([]byte{1}, 32)}
	r := testKeyring(t, k1)
	c := sampleConn()
	blob, err := r.Seal(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(blob) > RelayMaxBlob || blob[0] != 1 {
		t.Fatalf("blob of %d bytes, key id %d", len(blob), blob[0])
	}
	// As UTP sends it: padded with zeros to 255 bytes.
	field := make([]byte, 255)
	copy(field, blob)
	got, err := r.Open(field)
	if err != nil {
		t.Fatal(err)
	}
	c.KeyID = 1
	if got != c {
		t.Fatalf("got %+v, want %+v", got, c)
	}
	if !got.IsJoiner() {
		t.Fatal("IsJoiner false for a blob with a host")
	}
}

func TestRelayOpenRejects(t *testing.T) {
	r := testKeyring(t, RelayKey{ID: 1, Secret: bytes.Repeat([]byte{1}, 32)})
	other := testKeyring(t, RelayKey{ID: 1, Secret: bytes.Repeat([]byte{2}, 32)})
	blob, err := r.Seal(sampleConn())
	if err != nil {
		t.Fatal(err)
	}
	padded := func(b []byte) []byte { f := make([]byte, 255); copy(f, b); return f }
	flip := func(i int) []byte { b := padded(blob); b[i] ^= 1; return b }
	cases := []struct {
		name  string
		field []byte
		r     *RelayKeyring
	}{
		{"other secret", padded(blob), other},
		{"unknown key id", flip(0), r},
		{"length changed", flip(1), r},
		{"nonce changed", flip(5), r},
		{"ciphertext changed", flip(40), r},
		{"tag changed", flip(len(blob) - 1), r},
		{"garbage after the blob", func() []byte { b := padded(blob); b[254] = 1; return b }(), r},
		{"truncated", blob[:len(blob)-1], r},
		{"empty", nil, r},
		{"zeros", make([]byte, 255), r},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.r.Open(tc.field); !errors.Is(err, ErrRelayBlob) {
				t.Fatalf("got %v, want ErrRelayBlob", err)
			}
		})
	}
}

func TestRelayKeyRotation(t *testing.T) {
	old := RelayKey{ID: 1, Secret: bytes.Repeat([]byte{1}, 32)}
	next := RelayKey{ID: 2, Secret: bytes.Repeat([]byte{2}, 32)}
	before := testKeyring(t, old)
	during := testKeyring(t, next, old) // step 2: seal with the new one, open both
	after := testKeyring(t, next)

	oldBlob, _ := before.Seal(sampleConn())
	newBlob, err := during.Seal(sampleConn())
	if err != nil || newBlob[0] != 2 {
		t.Fatalf("sealed under key %d (%v), want 2", newBlob[0], err)
	}
	if _, err := during.Open(oldBlob); err != nil {
		t.Fatalf("old blob during rotation: %v", err)
	}
	if _, err := after.Open(newBlob); err != nil {
		t.Fatalf("new blob after rotation: %v", err)
	}
	if _, err := after.Open(oldBlob); !errors.Is(err, ErrRelayBlob) {
		t.Fatalf("old blob after rotation: got %v, want ErrRelayBlob", err)
	}
	// The allocation key follows the blob's key id.
	c := sampleConn()
	k1, _ := during.AllocationKey(1, c.AllocationID)
	k1b, _ := before.AllocationKey(1, c.AllocationID)
	k2, _ := during.AllocationKey(2, c.AllocationID)
	if k1 != k1b || k1 == k2 {
		t.Fatal("allocation keys do not follow the key id")
	}
}

func TestRelayAllocationKey(t *testing.T) {
	r := testKeyring(t, RelayKey{ID: 7, Secret: bytes.Repeat([]byte{7}, 32)})
	a, err := r.AllocationKey(7, [16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.AllocationKey(7, [16]byte{2})
	a2, _ := r.AllocationKey(7, [16]byte{1})
	if a == b || a != a2 || a == [RelayKeySize]byte{} {
		t.Fatal("allocation key not a function of the id")
	}
	if _, err := r.AllocationKey(8, [16]byte{1}); !errors.Is(err, ErrRelayBlob) {
		t.Fatalf("unknown key id: got %v", err)
	}
}

// An allocation id names its key: the key of a blob sealed when the id was
// made derives from the id alone, before and after a rotation.
func TestRelayAllocationKeyOfID(t *testing.T) {
	old := RelayKey{ID: 3, Secret: bytes.Repeat([]byte{3}, 32)}
	next := RelayKey{ID: 4, Secret: bytes.Repeat([]byte{4}, 32)}
	before := testKeyring(t, old)
	node := testKeyring(t, old, next) // a relay node during a rotation
	after := testKeyring(t, next, old)
	for _, r := range []*RelayKeyring{before, after} {
		id, err := r.NewAllocationID(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("id %x is not a version 4 UUID", id)
		}
		c := sampleConn()
		c.AllocationID = id
		blob, err := r.Seal(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := r.AllocationKey(blob[0], id) // what the REST API hands out
		got, err := node.AllocationKeyOfID(id)
		if err != nil || got != want {
			t.Fatalf("key id %d: AllocationKeyOfID = %x, %v; want the key of the blob's key id", blob[0], got[:4], err)
		}
	}
	if _, err := before.AllocationKeyOfID([16]byte{RelayKeyIDByte: 9}); !errors.Is(err, ErrRelayBlob) {
		t.Fatalf("unknown key id: got %v, want ErrRelayBlob", err)
	}
	if _, err := before.NewAllocationID(bytes.NewReader(nil)); err == nil {
		t.Fatal("NewAllocationID with a failing source: no error")
	}
}

func TestRelayKeyringRejects(t *testing.T) {
	if _, err := NewRelayKeyring(); !errors.Is(err, ErrRelayKey) {
		t.Fatalf("no key: %v", err)
	}
	if _, err := NewRelayKeyring(RelayKey{Secret: make([]byte, 31)}); !errors.Is(err, ErrRelayKey) {
		t.Fatalf("short secret: %v", err)
	}
	k := RelayKey{ID: 1, Secret: make([]byte, 32)}
	if _, err := NewRelayKeyring(k, k); !errors.Is(err, ErrRelayKey) {
		t.Fatalf("duplicate id: %v", err)
	}
	r := testKeyring(t, k)
	c := sampleConn()
	c.NodeID += "x"
	if _, err := r.Seal(c); err == nil {
		t.Fatal("long node id sealed")
	}
}

func FuzzRelayOpen(f *testing.F) {
	r, _ := NewRelayKeyring(RelayKey{ID: 1, Secret: bytes.Repeat([]byte{1}, 32)})
	blob, _ := r.Seal(sampleConn())
	f.Add(blob)
	f.Add(make([]byte, 255))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := r.Open(b)
		if err == nil && (len(c.NodeID) > RelayMaxNodeID || len(c.Region) > RelayMaxRegion) {
			t.Fatal("opened over limits")
		}
	})
}
