package relayapi

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// principal is who a request comes from.
type principal struct {
	// owner owns the allocations the request makes: a joincode request
	// must come from the same owner (a user, a project, a Unity player).
	owner string
	// player is the key of the per-player rate limits.
	player string
	// key is the relay API key's id, for its quota; empty for other
	// credentials.
	key string
}

// APIKeyPrefix starts every relay API key.
const APIKeyPrefix = "srk1."

// maxBearer bounds a Bearer credential (a Unity token is about 1 KiB).
const maxBearer = 8 << 10

// authenticate finds the principal of r (see the package doc for the
// order of the credentials tried).
func (s *Server) authenticate(ctx context.Context, r *http.Request, now time.Time) (principal, error) {
	ip := httpapi.ClientIP(r)
	tok, ok := bearer(r)
	if !ok {
		if r.Header.Get("Authorization") == "" && s.cfg.AllowAnonymous {
			return principal{owner: "anon:" + ip, player: "anon:" + ip}, nil
		}
		return principal{}, unauthorized("missing Bearer credentials")
	}
	if len(tok) > maxBearer {
		return principal{}, unauthorized("invalid Bearer credentials")
	}
	switch {
	case strings.HasPrefix(tok, tokens.PrefixAccessToken) && s.cfg.AuthClient != nil:
		sess, err := s.cfg.AuthClient(ctx, r, now)
		if err != nil {
			var he *httpapi.Error
			if errors.As(err, &he) && he.Status == http.StatusUnauthorized {
				return principal{}, unauthorized(he.Message)
			}
			return principal{}, err
		}
		return principal{owner: "user:" + sess.Username, player: "user:" + sess.Username}, nil
	case strings.HasPrefix(tok, APIKeyPrefix):
		k, err := s.verifyAPIKey(ctx, tok)
		if err != nil {
			return principal{}, err
		}
		return principal{owner: "project:" + k.Project, player: "key:" + k.KeyID + "@" + ip, key: k.KeyID}, nil
	}
	if s.unity != nil {
		if sub, err := s.unity.verify(tok, s.cfg.UnityIssuer, now); err == nil {
			return principal{owner: "unity:" + sub, player: "unity:" + sub}, nil
		}
	}
	if a, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		addr := a.Addr().Unmap()
		for _, p := range s.cfg.TrustedNetworks {
			if p.Contains(addr) {
				sub := unverifiedSubject(tok)
				return principal{owner: "unity:" + sub, player: "unity:" + sub}, nil
			}
		}
	}
	return principal{}, unauthorized("invalid Bearer credentials")
}

// bearer returns the credentials of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// apiKeyID is the id of an API key secret: the first 16 hex digits of its
// SHA-256, and the hex of the whole hash.
func apiKeyID(secret string) (id, hash string) {
	h := sha256.Sum256([]byte(secret))
	full := hex.EncodeToString(h[:])
	return full[:16], full
}

func (s *Server) verifyAPIKey(ctx context.Context, tok string) (*store.RelayAPIKey, error) {
	id, hash := apiKeyID(tok)
	k, err := s.db.GetRelayAPIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unauthorized("invalid API key")
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(k.SecretHash), []byte(hash)) != 1 {
		return nil, unauthorized("invalid API key")
	}
	return k, nil
}

// unverifiedSubject is the "sub" of a JWT read without checking it, or a
// hash of the token when it has none: the player of a trusted network's
// Bearer.
func unverifiedSubject(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var c struct {
				Sub string `json:"sub"`
			}
			if json.Unmarshal(b, &c) == nil && c.Sub != "" && len(c.Sub) <= 128 {
				return c.Sub
			}
		}
	}
	h := sha256.Sum256([]byte(tok))
	return "t" + hex.EncodeToString(h[:8])
}

// jwks holds the RSA keys of a JWKS document, by kid.
type jwks struct {
	keys map[string]*rsa.PublicKey
}

// maxJWKSKeys bounds the keys of a JWKS document.
const maxJWKSKeys = 64

func parseJWKS(doc []byte) (*jwks, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("JWKS: more than %d keys", maxJWKSKeys)
	}
	k := &jwks{keys: map[string]*rsa.PublicKey{}}
	for _, key := range set.Keys {
		if key.Kty != "RSA" || (key.Alg != "" && key.Alg != "RS256") || (key.Use != "" && key.Use != "sig") {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(key.N)
		e, err2 := base64.RawURLEncoding.DecodeString(key.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 || len(n) < 256 {
			return nil, fmt.Errorf("JWKS: key %q: bad n or e (RSA keys of at least 2048 bits)", key.Kid)
		}
		k.keys[key.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	if len(k.keys) == 0 {
		return nil, errors.New("JWKS: no RS256 signing key")
	}
	return k, nil
}

// verify checks an RS256 JWT signed by one of the keys, its expiry and
// not-before (with a minute of leeway) and, when iss is not empty, its
// issuer; it returns the subject.
func (k *jwks) verify(tok, iss string, now time.Time) (string, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", err
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(hb, &h); err != nil || h.Alg != "RS256" {
		return "", errors.New("not an RS256 JWT")
	}
	pub := k.keys[h.Kid]
	if pub == nil {
		return "", errors.New("unknown key id")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		return "", err
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var c struct {
		Sub string   `json:"sub"`
		Iss string   `json:"iss"`
		Exp *float64 `json:"exp"`
		Nbf *float64 `json:"nbf"`
	}
	if err := json.Unmarshal(cb, &c); err != nil {
		return "", err
	}
	const leeway = 60
	t := float64(now.Unix())
	switch {
	case c.Exp == nil || t > *c.Exp+leeway:
		return "", errors.New("expired")
	case c.Nbf != nil && t < *c.Nbf-leeway:
		return "", errors.New("not yet valid")
	case iss != "" && c.Iss != iss:
		return "", errors.New("wrong issuer")
	case c.Sub == "" || len(c.Sub) > 128:
		return "", errors.New("no subject")
	}
	return c.Sub, nil
}
