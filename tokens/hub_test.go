package tokens

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func hubKeyring(t testing.TB, keys ...HubKey) *HubKeyring {
	t.Helper()
	r, err := NewHubKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	hubSecretA = bytes.Repeat([]byte{0xA5}, 32)
	hubSecretB = bytes.Repeat([]byte{0x5A}, 32)
)

func sampleHubTicket(now time.Time) HubTicket {
	return HubTicket{
		Username: "alice", Network: "lobby", PeerID: "alice~k3f9", HubID: "hub-1",
		Issued: now, Expires: now.Add(time.Minute),
	}
}

func TestHubTicketRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_123)
	r := hubKeyring(t, HubKey{ID: 7, Secret: hubSecretA})
	tk := sampleHubTicket(now)
	text, err := r.Seal(tk)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, PrefixHubTicket) || len(text) > HubTicketMaxLen {
		t.Fatalf("ticket %q: bad prefix or length %d > %d", text, len(text), HubTicketMaxLen)
	}
	got, err := r.Open([]byte(text), now)
	if err != nil {
		t.Fatal(err)
	}
	tk.KeyID = 7
	if !got.Issued.Equal(tk.Issued) || !got.Expires.Equal(tk.Expires) {
		t.Fatalf("times: got %v..%v want %v..%v", got.Issued, got.Expires, tk.Issued, tk.Expires)
	}
	got.Issued, got.Expires, tk.Issued, tk.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != tk {
		t.Fatalf("got %+v, want %+v", got, tk)
	}
	// Expiry: authentic but late tickets come back with their contents.
	got, err = r.Open([]byte(text), now.Add(time.Minute))
	if !errors.Is(err, ErrHubTicketExpired) || got.PeerID != "alice~k3f9" {
		t.Fatalf("at expiry: %+v, %v", got, err)
	}
}

func TestHubTicketLongest(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := hubKeyring(t, HubKey{ID: 1, Secret: hubSecretA})
	u := strings.Repeat("u", HubMaxUsername)
	tk := HubTicket{
		Username: u, Network: strings.Repeat("n", HubMaxNetwork),
		PeerID: u + "~" + strings.Repeat("r", HubMaxPeerID-HubMaxUsername-1),
		HubID:  strings.Repeat("h", HubMaxNodeID), Issued: now, Expires: now.Add(HubTicketMaxTTL),
	}
	text, err := r.Seal(tk)
	if err != nil {
		t.Fatal(err)
	}
	if len(text) != HubTicketMaxLen || HubTicketMaxLen > 2048 {
		t.Fatalf("longest ticket %d bytes, HubTicketMaxLen %d (HELLO allows 2048)", len(text), HubTicketMaxLen)
	}
	if _, err := r.Open([]byte(text), now); err != nil {
		t.Fatal(err)
	}
}

func TestHubTicketSealRefuses(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := hubKeyring(t, HubKey{ID: 1, Secret: hubSecretA})
	for name, mod := range map[string]func(*HubTicket){
		"no username":          func(t *HubTicket) { t.Username = "" },
		"no network":           func(t *HubTicket) { t.Network = "" },
		"no hub":               func(t *HubTicket) { t.HubID = "" },
		"long network":         func(t *HubTicket) { t.Network = strings.Repeat("n", HubMaxNetwork+1) },
		"peer of another user": func(t *HubTicket) { t.PeerID = "bob~k3f9" },
		"peer without random":  func(t *HubTicket) { t.PeerID = "alice~" },
		"expired at issue":     func(t *HubTicket) { t.Expires = t.Issued },
		"too long-lived":       func(t *HubTicket) { t.Expires = t.Issued.Add(HubTicketMaxTTL + time.Millisecond) },
	} {
		tk := sampleHubTicket(now)
		mod(&tk)
		if _, err := r.Seal(tk); err == nil {
			t.Errorf("%s: sealed", name)
		}
	}
}

func TestHubTicketRotationAndForgery(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := hubKeyring(t, HubKey{ID: 1, Secret: hubSecretA})
	rotated := hubKeyring(t, HubKey{ID: 2, Secret: hubSecretB}, HubKey{ID: 1, Secret: hubSecretA})
	other := hubKeyring(t, HubKey{ID: 1, Secret: hubSecretB})
	tOld, _ := old.Seal(sampleHubTicket(now))
	tNew, _ := rotated.Seal(sampleHubTicket(now))
	if got, err := rotated.Open([]byte(tOld), now); err != nil || got.KeyID != 1 {
		t.Fatalf("rotated keyring, old ticket: %+v %v", got, err)
	}
	if got, err := rotated.Open([]byte(tNew), now); err != nil || got.KeyID != 2 {
		t.Fatalf("rotated keyring, new ticket: %+v %v", got, err)
	}
	if _, err := old.Open([]byte(tNew), now); !errors.Is(err, ErrHubTicket) {
		t.Fatalf("old keyring, new ticket: %v", err)
	}
	if _, err := other.Open([]byte(tOld), now); !errors.Is(err, ErrHubTicket) {
		t.Fatalf("another deployment's ticket: %v", err)
	}
	// Every single-byte change of the text is refused.
	for i := range len(tOld) {
		b := []byte(tOld)
		b[i] ^= 0x01
		if _, err := old.Open(b, now); err == nil {
			t.Fatalf("flip at %d accepted", i)
		}
	}
	for name, v := range map[string]string{
		"empty":      "",
		"prefix":     PrefixHubTicket,
		"newline":    tOld[:20] + "\n" + tOld[20:],
		"padding":    tOld + "=",
		"truncated":  tOld[:len(tOld)-1],
		"other kind": "rt1." + tOld[len(PrefixHubTicket):],
		"too long":   PrefixHubTicket + strings.Repeat("A", HubTicketMaxLen),
	} {
		if _, err := old.Open([]byte(v), now); !errors.Is(err, ErrHubTicket) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNewHubKeyringRefuses(t *testing.T) {
	for name, keys := range map[string][]HubKey{
		"none":      nil,
		"short":     {{ID: 1, Secret: hubSecretA[:31]}},
		"duplicate": {{ID: 1, Secret: hubSecretA}, {ID: 1, Secret: hubSecretB}},
	} {
		if _, err := NewHubKeyring(keys...); !errors.Is(err, ErrHubKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzHubTicketOpen(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	r := hubKeyring(f, HubKey{ID: 1, Secret: hubSecretA})
	text, _ := r.Seal(sampleHubTicket(now))
	f.Add([]byte(text))
	f.Add([]byte(PrefixHubTicket))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := r.Open(b, now)
		if err == nil && (tk.PeerID == "" || tk.HubID == "") {
			t.Fatalf("opened an empty ticket: %+v", tk)
		}
	})
}
