package tokens

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustSigner(t *testing.T, key string) *Signer {
	t.Helper()
	s, err := NewSigner([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSignerRejectsShortKey(t *testing.T) {
	if _, err := NewSigner(make([]byte, MinKeyLen-1)); err == nil {
		t.Fatal("got nil error for a short key")
	}
}

func TestConnectTicket(t *testing.T) {
	s := mustSigner(t, "0123456789abcdef0123456789abcdef")
	other := mustSigner(t, "fedcba9876543210fedcba9876543210")
	now := time.UnixMilli(1_800_000_000_000)
	in := ConnectTicket{
		RoomID: strings.Repeat("r", 64), Seat: 15, Username: strings.Repeat("u", 64),
		SessionID: NewID(), ClientSessionID: strings.Repeat("c", 64),
		ExpiresMS: now.Add(60 * time.Second).UnixMilli(), ID: NewID(),
	}
	tok, err := s.SignConnectTicket(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > 1024 {
		t.Errorf("ticket of maximal fields is %d bytes, over the handshake cap 1024", len(tok))
	}
	got, err := s.VerifyConnectTicket(tok, now)
	if err != nil || got != in {
		t.Fatalf("got %+v, %v; want %+v", got, err, in)
	}
	if _, err := s.VerifyConnectTicket(tok, now.Add(60*time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: got %v, want ErrExpired", err)
	}
	if _, err := other.VerifyConnectTicket(tok, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("other key: got %v, want ErrInvalid", err)
	}
	// A token of another kind signed with the same key is not a ticket.
	at, _ := s.SignAccessToken(AccessToken{SessionID: "x", ExpiresMS: in.ExpiresMS})
	if _, err := s.VerifyConnectTicket(at, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("access token as ticket: got %v, want ErrInvalid", err)
	}
	// Any flipped character breaks it.
	for i := len(PrefixConnectTicket); i < len(tok); i += 7 {
		b := []byte(tok)
		b[i] ^= 1
		if _, err := s.VerifyConnectTicket(string(b), now); err == nil {
			t.Fatalf("flipping byte %d still verifies", i)
		}
	}
}

func TestResumeTokenFitsProtocolCap(t *testing.T) {
	s := mustSigner(t, "0123456789abcdef0123456789abcdef")
	in := ResumeToken{RoomID: strings.Repeat("r", 64), Seat: 15, SessionID: NewID(), Gen: 1<<64 - 1}
	tok, err := s.SignResumeToken(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) > 256 {
		t.Fatalf("resume token is %d bytes, over 256", len(tok))
	}
	got, err := s.VerifyResumeToken(tok)
	if err != nil || got != in {
		t.Fatalf("got %+v, %v; want %+v", got, err, in)
	}
}

func TestVerifyRejectsMalformed(t *testing.T) {
	s := mustSigner(t, "0123456789abcdef0123456789abcdef")
	for _, tok := range []string{
		"", "at1.", "at1.x", "at1.x.y", "at1.!!!.abc", "ct1.e30.AAAA",
		"at1." + strings.Repeat("A", MaxTokenLen),
	} {
		if _, err := s.VerifyAccessToken(tok, time.Now()); !errors.Is(err, ErrInvalid) {
			t.Errorf("VerifyAccessToken(%.20q): got %v, want ErrInvalid", tok, err)
		}
	}
}

func TestAuthTokenExpiry(t *testing.T) {
	s := mustSigner(t, "server-key-server-key")
	now := time.Unix(1_800_000_000, 0)
	tok, _ := s.SignAuthToken(AuthToken{Username: "alice", Expires: now.Unix() + 10})
	if got, err := s.VerifyAuthToken(tok, now); err != nil || got.Username != "alice" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := s.VerifyAuthToken(tok, now.Add(10*time.Second)); !errors.Is(err, ErrExpired) {
		t.Fatalf("got %v, want ErrExpired", err)
	}
}

// TestNewNameIsNoFlag: generated room ids are passed to the CLI, which
// parsed the one in 64 that started with '-' as a flag.
func TestNewNameIsNoFlag(t *testing.T) {
	first := map[byte]bool{}
	for range 20000 {
		s := NewName(12)
		if len(s) != 16 || strings.HasPrefix(s, "-") || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			t.Fatalf("NewName(12) = %q, want 16 characters of [A-Za-z0-9_-], not starting with -", s)
		}
		first[s[0]] = true
	}
	if len(first) != 63 { // 20,000 draws miss one of 63 characters with p < 1e-130
		t.Errorf("%d distinct first characters, want 63", len(first))
	}
}

func TestRandomTokens(t *testing.T) {
	a, b := NewJoinTicket(), NewJoinTicket()
	if a == b || !strings.HasPrefix(a, PrefixJoinTicket) || len(a) != len(PrefixJoinTicket)+43 {
		t.Fatalf("join tickets %q %q", a, b)
	}
	if Hash(a) == Hash(b) || len(Hash(a)) != 64 {
		t.Fatal("hashes of distinct tickets collide or have the wrong size")
	}
}
