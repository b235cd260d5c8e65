package tokens

import (
	"strings"
	"testing"
	"time"
)

// TestOneSpellingPerToken: only the canonical unpadded base64url of a
// token verifies. The last character of a 43-character MAC carries 4
// bits and 2 unused ones; a lenient decoder accepts 4 spellings of each
// token (and ignores line breaks).
func TestOneSpellingPerToken(t *testing.T) {
	s := mustSigner(t, "0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok, err := s.SignAuthToken(AuthToken{Username: "alice", Expires: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyAuthToken(tok, now); err != nil {
		t.Fatalf("canonical token: %v", err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	accepted := 0
	for i := range 4 {
		v := tok[:len(tok)-1] + string(alphabet[last&^3|i])
		if _, err := s.VerifyAuthToken(v, now); err == nil {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("%d spellings of the MAC verify, want 1", accepted)
	}
	body, sig, _ := strings.Cut(strings.TrimPrefix(tok, PrefixAuthToken), ".")
	for name, v := range map[string]string{
		"newline in the MAC":     PrefixAuthToken + body + "." + sig[:10] + "\n" + sig[10:],
		"CR in the payload":      PrefixAuthToken + body[:5] + "\r" + body[5:] + "." + sig,
		"padding":                tok + "=",
		"standard alphabet sign": PrefixAuthToken + body + "." + strings.NewReplacer("-", "+", "_", "/").Replace(sig),
	} {
		if v == tok {
			continue // the MAC had no - or _ to swap
		}
		if _, err := s.VerifyAuthToken(v, now); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}
