package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors returned by the Verify methods.
var (
	// ErrInvalid means the token is malformed, of another kind, or its MAC
	// does not match.
	ErrInvalid = errors.New("tokens: invalid token")
	// ErrExpired means the token verified but its expiry has passed.
	ErrExpired = errors.New("tokens: token expired")
)

// MinKeyLen is the shortest key [NewSigner] accepts.
const MinKeyLen = 16

// MaxTokenLen bounds every token a Verify method looks at.
const MaxTokenLen = 2048

// Prefixes of the signed tokens.
const (
	PrefixConnectTicket = "ct1."
	PrefixResumeToken   = "rt1."
	PrefixAccessToken   = "at1."
	PrefixAuthToken     = "sat1."
	PrefixRefreshToken  = "rf1_"
	PrefixJoinTicket    = "gtk_"
)

// b64 is unpadded base64url that decodes only the canonical spelling:
// unused trailing bits must be zero. Line breaks, which the decoder would
// skip, are refused by verify.
var b64 = base64.RawURLEncoding.Strict()

// Signer signs and verifies tokens with one HMAC key.
type Signer struct {
	key []byte // immutable after NewSigner
}

// NewSigner returns a Signer for key, which it copies. The key must be at
// least [MinKeyLen] bytes.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("tokens: key of %d bytes is shorter than %d", len(key), MinKeyLen)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

func (s *Signer) mac(prefix string, payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(prefix))
	h.Write(payload)
	return h.Sum(nil)
}

func (s *Signer) sign(prefix string, v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("tokens: encode payload: %w", err)
	}
	var sb strings.Builder
	sb.Grow(len(prefix) + b64.EncodedLen(len(payload)) + 1 + b64.EncodedLen(sha256.Size))
	sb.WriteString(prefix)
	sb.WriteString(b64.EncodeToString(payload))
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(s.mac(prefix, payload)))
	return sb.String(), nil
}

func (s *Signer) verify(prefix, tok string, v any) error {
	if len(tok) > MaxTokenLen || !strings.HasPrefix(tok, prefix) || strings.ContainsAny(tok, "\r\n") {
		return ErrInvalid
	}
	body, sig, ok := strings.Cut(tok[len(prefix):], ".")
	if !ok {
		return ErrInvalid
	}
	payload, err := b64.DecodeString(body)
	if err != nil {
		return ErrInvalid
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(prefix, payload)) {
		return ErrInvalid
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return ErrInvalid
	}
	return nil
}

// ConnectTicket is what a node needs to seat a player: the control plane
// signs it at C1 and the node verifies it in the handshake.
type ConnectTicket struct {
	RoomID          string `json:"room_id"`
	Seat            int    `json:"seat"`
	Username        string `json:"username"`
	SessionID       string `json:"session_id"`
	ClientSessionID string `json:"client_session_id"`
	ExpiresMS       int64  `json:"exp"` // Unix milliseconds
	ID              string `json:"jti"` // random; a node accepts each ID once
}

// SignConnectTicket returns the ticket's text form.
func (s *Signer) SignConnectTicket(t ConnectTicket) (string, error) {
	return s.sign(PrefixConnectTicket, t)
}

// VerifyConnectTicket checks tok and returns its contents. It returns
// [ErrInvalid] for a bad token and [ErrExpired], with the contents, for one
// whose expiry is not after now.
func (s *Signer) VerifyConnectTicket(tok string, now time.Time) (ConnectTicket, error) {
	var t ConnectTicket
	if err := s.verify(PrefixConnectTicket, tok, &t); err != nil {
		return ConnectTicket{}, err
	}
	if t.ID == "" || t.RoomID == "" {
		return ConnectTicket{}, ErrInvalid
	}
	if now.UnixMilli() >= t.ExpiresMS {
		return t, ErrExpired
	}
	return t, nil
}

// ResumeToken lets a seat's player reconnect. Gen is the seat's connection
// generation at the time the node issued the token: the node bumps it on
// every WELCOME, so each token works once. Its JSON keys are short so that
// the token stays under the protocol's 256-byte cap.
type ResumeToken struct {
	RoomID    string `json:"r"`
	Seat      int    `json:"s"`
	SessionID string `json:"i"`
	Gen       uint64 `json:"g"`
}

// SignResumeToken returns the token's text form.
func (s *Signer) SignResumeToken(t ResumeToken) (string, error) {
	return s.sign(PrefixResumeToken, t)
}

// VerifyResumeToken checks tok and returns its contents, or [ErrInvalid].
func (s *Signer) VerifyResumeToken(tok string) (ResumeToken, error) {
	var t ResumeToken
	if err := s.verify(PrefixResumeToken, tok, &t); err != nil {
		return ResumeToken{}, err
	}
	return t, nil
}

// AccessToken authenticates a player's HTTP calls for one login session.
type AccessToken struct {
	SessionID string `json:"sid"`
	Username  string `json:"sub"`
	ExpiresMS int64  `json:"exp"` // Unix milliseconds
}

// SignAccessToken returns the token's text form.
func (s *Signer) SignAccessToken(t AccessToken) (string, error) {
	return s.sign(PrefixAccessToken, t)
}

// VerifyAccessToken checks tok and returns its contents, [ErrInvalid] or
// [ErrExpired].
func (s *Signer) VerifyAccessToken(tok string, now time.Time) (AccessToken, error) {
	var t AccessToken
	if err := s.verify(PrefixAccessToken, tok, &t); err != nil {
		return AccessToken{}, err
	}
	if t.SessionID == "" {
		return AccessToken{}, ErrInvalid
	}
	if now.UnixMilli() >= t.ExpiresMS {
		return t, ErrExpired
	}
	return t, nil
}

// AuthToken is the game backend's word that a player may log in as
// Username. Backends get one from the server API or mint it themselves with
// the server API key (format in docs/api.md).
type AuthToken struct {
	Username string `json:"sub"`
	Expires  int64  `json:"exp"` // Unix seconds
}

// SignAuthToken returns the token's text form.
func (s *Signer) SignAuthToken(t AuthToken) (string, error) {
	return s.sign(PrefixAuthToken, t)
}

// VerifyAuthToken checks tok and returns its contents, [ErrInvalid] or
// [ErrExpired].
func (s *Signer) VerifyAuthToken(tok string, now time.Time) (AuthToken, error) {
	var t AuthToken
	if err := s.verify(PrefixAuthToken, tok, &t); err != nil {
		return AuthToken{}, err
	}
	if t.Username == "" {
		return AuthToken{}, ErrInvalid
	}
	if now.Unix() >= t.Expires {
		return t, ErrExpired
	}
	return t, nil
}

// Random returns n random bytes as unpadded base64url. It panics only if the
// system's random source fails, which crypto/rand documents as fatal.
func Random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b64.EncodeToString(b)
}

// NewName returns n random bytes (n ≥ 1) as unpadded base64url, like
// [Random], but never starting with '-': a generated room id or node id is
// passed as a command-line argument (`switchboard room get ID`), where a
// leading '-' makes it a flag. A name starting with '-' is drawn again, so
// the others stay equally likely.
func NewName(n int) string {
	for {
		if s := Random(n); s[0] != '-' {
			return s
		}
	}
}

// NewID returns a random 128-bit identifier, e.g. for a login session or a
// connect ticket.
func NewID() string { return Random(16) }

// NewJoinTicket returns a new random join ticket ("gtk_…").
func NewJoinTicket() string { return PrefixJoinTicket + Random(32) }

// Hash returns the hex SHA-256 of a random token, the form in which join
// tickets and refresh tokens are stored.
func Hash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
