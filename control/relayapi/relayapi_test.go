package relayapi

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/natstest"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

type env struct {
	t    *testing.T
	db   *store.DB
	keys *tokens.RelayKeyring
	srv  *Server
	url  string
}

func newEnv(t *testing.T, tweak ...func(*Config)) *env {
	t.Helper()
	_, bb := natstest.Start(t, backbone.Config{})
	db, err := store.Open(context.Background(), bb, store.Config{Logger: discard})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 7, Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DB: db, Keys: keys, AllowAnonymous: true, Logger: discard, RequestsPerMinute: -1, JoinsPerMinutePerAddress: -1}
	for _, f := range tweak {
		f(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, db: db, keys: keys, srv: srv, url: hs.URL}
}

// putNode registers a relay node.
func (e *env) putNode(id, region string, load float64, draining bool) *store.Node {
	e.t.Helper()
	n := &store.Node{Role: store.RoleRelay, NodeID: id, Region: region, Load: load, Draining: draining, BootEpoch: 42,
		Addresses: map[string]string{AddrUDP: "127.0.0.1:37000", AddrUDP6: "[::1]:37000", AddrWS: "wss://relay.example:37001/",
			AddrDTLS: "127.0.0.1:37002"}}
	if err := e.db.PutNode(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

type reply struct {
	status int
	header http.Header
	raw    []byte
}

func (r reply) problem(t *testing.T) api.RelayProblem {
	t.Helper()
	var p api.RelayProblem
	if err := json.Unmarshal(r.raw, &p); err != nil {
		t.Fatalf("problem %s: %v", r.raw, err)
	}
	if ct := r.header.Get("Content-Type"); ct != api.RelayProblemContentType {
		t.Errorf("Content-Type %q, want %q", ct, api.RelayProblemContentType)
	}
	return p
}

func (e *env) do(method, path, auth, body string) reply {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return reply{res.StatusCode, res.Header, raw}
}

func (e *env) allocate(auth, body string) api.RelayAllocation {
	e.t.Helper()
	r := e.do("POST", "/relay/v1/allocate", auth, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("allocate: %d %s", r.status, r.raw)
	}
	var out api.RelayResponse[api.RelayAllocationData]
	if err := json.Unmarshal(r.raw, &out); err != nil {
		e.t.Fatal(err)
	}
	if out.Meta.Status != 201 || out.Meta.RequestID == "" {
		e.t.Errorf("meta %+v", out.Meta)
	}
	return out.Data.Allocation
}

func (e *env) joinCode(auth, allocID string) reply {
	return e.do("POST", "/relay/v1/joincode", auth, `{"allocationId":"`+allocID+`"}`)
}

func codeOf(t *testing.T, r reply) string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("joincode: %d %s", r.status, r.raw)
	}
	var out api.RelayResponse[api.RelayJoinCodeData]
	if err := json.Unmarshal(r.raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Data.JoinCode
}

func (e *env) join(auth, code string) (api.RelayAllocation, reply) {
	r := e.do("POST", "/relay/v1/join", auth, `{"joinCode":"`+code+`"}`)
	var out api.RelayResponse[api.RelayAllocationData]
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.raw, &out); err != nil {
			e.t.Fatal(err)
		}
	}
	return out.Data.Allocation, r
}

func TestAllocateJoinCodeJoin(t *testing.T) {
	e := newEnv(t)
	e.putNode("relay-a", "eu", 0.1, false)
	a := e.allocate("", `{"maxConnections":3,"region":"eu","future":{"x":[1,2]}}`)

	// The allocation's fields, as Unity's clients read them.
	id, ok := parseUUID(a.AllocationID)
	if !ok || !bytes.Equal(a.AllocationIDBytes, id[:]) {
		t.Errorf("allocationIdBytes %x, want the RFC 4122 bytes of %s", a.AllocationIDBytes, a.AllocationID)
	}
	if len(a.Key) != 64 || len(a.ConnectionData) > 255 || a.Region != "eu" {
		t.Errorf("key %d bytes, connectionData %d bytes, region %q", len(a.Key), len(a.ConnectionData), a.Region)
	}
	conn, err := e.keys.Open(a.ConnectionData)
	if err != nil {
		t.Fatalf("the relay node cannot open connectionData: %v", err)
	}
	if conn.AllocationID != id || conn.NodeID != "relay-a" || conn.BootEpoch != 42 || conn.MaxConnections != 3 || conn.IsJoiner() {
		t.Errorf("sealed %+v", conn)
	}
	if k, _ := e.keys.AllocationKey(conn.KeyID, id); !bytes.Equal(k[:], a.Key) {
		t.Error("key is not the allocation key the relay node derives")
	}
	if k, _ := e.keys.AllocationKeyOfID(id); !bytes.Equal(k[:], a.Key) {
		t.Error("key is not the DTLS pre-shared key the relay node derives from the id alone")
	}
	wantEps := []api.RelayServerEndpoint{
		{ConnectionType: "udp", Network: "udp", Host: "127.0.0.1", Port: 37000},
		{ConnectionType: "udp", Network: "udp", Host: "::1", Port: 37000},
		{ConnectionType: "dtls", Network: "udp", Secure: true, Host: "127.0.0.1", Port: 37002},
		{ConnectionType: "wss", Network: "tcp", Reliable: true, Secure: true, Host: "relay.example", Port: 37001},
	}
	if got, _ := json.Marshal(a.ServerEndpoints); string(got) != string(must(json.Marshal(wantEps))) {
		t.Errorf("serverEndpoints %s, want %s", got, must(json.Marshal(wantEps)))
	}
	// Unity's shape of a DTLS endpoint (reference unity-relay.md §5).
	if got, want := string(must(json.Marshal(a.ServerEndpoints[2]))),
		`{"connectionType":"dtls","network":"udp","reliable":false,"secure":true,"host":"127.0.0.1","port":37002}`; got != want {
		t.Errorf("DTLS endpoint %s, want %s", got, want)
	}
	if a.RelayServer == nil || a.RelayServer.IPV4 != "127.0.0.1" || a.RelayServer.Port != 37000 {
		t.Errorf("relayServer %+v", a.RelayServer)
	}

	// A join code, the same when asked again, in any case.
	code := codeOf(t, e.joinCode("", a.AllocationID))
	if len(code) != 6 || strings.Trim(code, api.RelayJoinCodeAlphabet) != "" {
		t.Errorf("join code %q", code)
	}
	if again := codeOf(t, e.joinCode("", strings.ToUpper(a.AllocationID))); again != code {
		t.Errorf("second join code %q, want %q", again, code)
	}

	j, r := e.join("", strings.ToLower(code))
	if r.status != http.StatusOK {
		t.Fatalf("join: %d %s", r.status, r.raw)
	}
	if !bytes.Equal(j.HostConnectionData, a.ConnectionData) || len(j.Key) != 64 || j.AllocationID == a.AllocationID {
		t.Errorf("join allocation %+v", j)
	}
	jc, err := e.keys.Open(j.ConnectionData)
	if err != nil || jc.HostAllocationID != id || jc.NodeID != "relay-a" {
		t.Errorf("joiner's sealed data %+v, %v", jc, err)
	}

	// Released by the relay node: the code dies.
	if err := e.db.ReleaseRelayAllocation(context.Background(), hex.EncodeToString(id[:])); err != nil {
		t.Fatal(err)
	}
	if _, r := e.join("", code); r.status != 404 || r.problem(t).Code != api.RelayCodeJoinCodeNotFound {
		t.Errorf("join after release: %d %s", r.status, r.raw)
	}
	if r := e.joinCode("", a.AllocationID); r.status != 404 || r.problem(t).Code != api.RelayCodeAllocationNotFound {
		t.Errorf("joincode after release: %d %s", r.status, r.raw)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestJoinCodeDiesWithNode(t *testing.T) {
	e := newEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	a := e.allocate("", `{"maxConnections":1}`)
	code := codeOf(t, e.joinCode("", a.AllocationID))
	// The node restarts: a new boot epoch.
	n := e.putNode("relay-a", "eu", 0, false)
	n.BootEpoch = 43
	if err := e.db.PutNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if _, r := e.join("", code); r.status != 404 {
		t.Errorf("join after the node restarted: %d %s", r.status, r.raw)
	}
	if _, err := e.db.GetRelayJoinCode(context.Background(), code); err == nil {
		t.Error("the dead code is still stored")
	}
}

func TestNodeChoice(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.DefaultRegion = "us" })
	e.putNode("eu-busy", "eu", 0.9, false)
	e.putNode("eu-idle", "eu", 0.2, false)
	e.putNode("eu-drain", "eu", 0.0, true)
	e.putNode("us-1", "us", 0.5, false)
	for _, tc := range []struct{ body, node string }{
		{`{"maxConnections":2,"region":"eu"}`, "eu-idle"},
		{`{"maxConnections":2}`, "us-1"},
		{`{"maxConnections":2,"region":"us"}`, "us-1"},
	} {
		a := e.allocate("", tc.body)
		c, err := e.keys.Open(a.ConnectionData)
		if err != nil || c.NodeID != tc.node {
			t.Errorf("%s: node %q (%v), want %q", tc.body, c.NodeID, err, tc.node)
		}
	}
	// A joiner goes to its host's node, even once the node drains.
	a := e.allocate("", `{"maxConnections":2,"region":"eu"}`)
	code := codeOf(t, e.joinCode("", a.AllocationID))
	e.putNode("eu-idle", "eu", 0.2, true)
	j, r := e.join("", code)
	if r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.raw)
	}
	if c, _ := e.keys.Open(j.ConnectionData); c.NodeID != "eu-idle" {
		t.Errorf("joiner on %q, want its host's node eu-idle", c.NodeID)
	}
	if r := e.do("POST", "/relay/v1/allocate", "", `{"maxConnections":1,"region":"mars"}`); r.status != 404 || r.problem(t).Code != api.RelayCodeRegionNotFound {
		t.Errorf("unknown region: %d %s", r.status, r.raw)
	}
	e.putNode("eu-busy", "eu", 0.9, true)
	if r := e.do("POST", "/relay/v1/allocate", "", `{"maxConnections":1,"region":"eu"}`); r.status != 503 || r.problem(t).Code != api.RelayCodeNoSuitableRelay {
		t.Errorf("every eu node draining: %d %s", r.status, r.raw)
	}

	var regions api.RelayResponse[api.RelayRegionsData]
	r = e.do("GET", "/relay/v1/regions", "", "")
	if err := json.Unmarshal(r.raw, &regions); err != nil || r.status != 200 {
		t.Fatalf("regions: %d %s", r.status, r.raw)
	}
	if len(regions.Data.Regions) != 1 || regions.Data.Regions[0].ID != "us" {
		t.Errorf("regions %+v, want us only (eu drains)", regions.Data.Regions)
	}
	var qos api.RelayResponse[api.QoSServersData]
	r = e.do("GET", "/qos/v1/servers?service=relay&region=us", "", "")
	if err := json.Unmarshal(r.raw, &qos); err != nil || r.status != 200 {
		t.Fatalf("qos: %d %s", r.status, r.raw)
	}
	if len(qos.Data.Servers) != 1 || qos.Data.Servers[0].Region != "us" || qos.Data.Servers[0].Endpoints[0] != "127.0.0.1:37000" {
		t.Errorf("qos servers %+v", qos.Data.Servers)
	}
}

func TestNoRelayNode(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/relay/v1/allocate", "", `{"maxConnections":1}`); r.status != 503 || r.problem(t).Code != api.RelayCodeNoSuitableRelay {
		t.Errorf("no node: %d %s", r.status, r.raw)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	for _, tc := range []struct {
		method, path, body string
		status, code       int
	}{
		{"POST", "/relay/v1/allocate", `{}`, 400, api.RelayCodeInvalidRequest},
		{"POST", "/relay/v1/allocate", `{"maxConnections":0}`, 400, api.RelayCodeInvalidRequest},
		{"POST", "/relay/v1/allocate", `{"maxConnections":101}`, 400, api.RelayCodeInvalidRequest},
		{"POST", "/relay/v1/allocate", `{"maxConnections":"3"}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":3,"maxConnections":4}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":3,"MaxConnections":4}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":3,"x":{"a":1,"a":2}}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":3`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":3} {}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `[1]`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", "{\"region\":\"\xff\"}", 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/allocate", `{"maxConnections":1,"pad":"` + strings.Repeat("x", 5000) + `"}`, 400, api.RelayCodeInvalidArgument},
		{"POST", "/relay/v1/joincode", `{"allocationId":"nope"}`, 400, api.RelayCodeInvalidRequest},
		{"POST", "/relay/v1/joincode", `{"allocationId":"f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458"}`, 404, api.RelayCodeAllocationNotFound},
		{"POST", "/relay/v1/join", `{}`, 400, api.RelayCodeInvalidRequest},
		{"POST", "/relay/v1/join", `{"joinCode":"AAAAAA"}`, 404, api.RelayCodeJoinCodeNotFound},
		{"POST", "/relay/v1/join", `{"joinCode":"BCDFGH"}`, 404, api.RelayCodeJoinCodeNotFound},
		{"GET", "/relay/v1/allocate", ``, 405, api.RelayCodeMethodNotAllowed},
		{"GET", "/relay/v1/nothing", ``, 404, api.RelayCodeEntityNotFound},
	} {
		r := e.do(tc.method, tc.path, "", tc.body)
		if r.status != tc.status {
			t.Errorf("%s %s %.60s: status %d, want %d (%s)", tc.method, tc.path, tc.body, r.status, tc.status, r.raw)
			continue
		}
		if p := r.problem(t); p.Code != tc.code || p.Status != tc.status || p.Title == "" || p.Type == "" {
			t.Errorf("%s %s %.60s: problem %+v, want code %d", tc.method, tc.path, tc.body, p, tc.code)
		}
	}
}

func TestAuth(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwksDoc := must(json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes()),
	}}}))
	now := time.Now()
	jwt := func(kid, sub string, exp time.Time) string {
		h := b64(must(json.Marshal(map[string]string{"alg": "RS256", "kid": kid, "typ": "JWT"})))
		c := b64(must(json.Marshal(map[string]any{"sub": sub, "exp": exp.Unix(), "iss": "https://player-auth.services.api.unity.com"})))
		d := sha256.Sum256([]byte(h + "." + c))
		sig, err := rsa.SignPKCS1v15(rand.Reader, rsaKey, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return h + "." + c + "." + b64(sig)
	}
	e := newEnv(t, func(c *Config) {
		c.AllowAnonymous = false
		c.UnityKeys = jwksDoc
		c.UnityIssuer = "https://player-auth.services.api.unity.com"
	})
	e.putNode("relay-a", "eu", 0, false)

	// An API key of a project.
	secret := APIKeyPrefix + "test-secret"
	id, hash := apiKeyID(secret)
	if err := e.db.CreateRelayAPIKey(context.Background(), &store.RelayAPIKey{KeyID: id, Name: "k", Project: "p1", SecretHash: hash}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"none", "", 401},
		{"not bearer", "Basic Zm9vOmJhcg==", 401},
		{"api key", "Bearer " + secret, 201},
		{"wrong api key", "Bearer " + APIKeyPrefix + "other", 401},
		{"unity token", "Bearer " + jwt("k1", "player-1", now.Add(time.Hour)), 201},
		{"expired unity token", "Bearer " + jwt("k1", "player-1", now.Add(-time.Hour)), 401},
		{"unknown kid", "Bearer " + jwt("k2", "player-1", now.Add(time.Hour)), 401},
		{"garbage", "Bearer abc.def.ghi", 401},
	} {
		r := e.do("POST", "/relay/v1/allocate", tc.auth, `{"maxConnections":1}`)
		if r.status != tc.status {
			t.Errorf("%s: %d, want %d (%s)", tc.name, r.status, tc.status, r.raw)
		}
		if r.status == 401 && r.problem(t).Code != api.RelayCodeUnauthorized {
			t.Errorf("%s: %s", tc.name, r.raw)
		}
	}
	// A join code belongs to the allocation's owner: the project of a key,
	// the subject of a token.
	a := e.allocate("Bearer "+jwt("k1", "player-1", now.Add(time.Hour)), `{"maxConnections":1}`)
	if r := e.joinCode("Bearer "+jwt("k1", "player-2", now.Add(time.Hour)), a.AllocationID); r.status != 404 {
		t.Errorf("another player's joincode: %d %s", r.status, r.raw)
	}
	code := codeOf(t, e.joinCode("Bearer "+jwt("k1", "player-1", now.Add(time.Hour)), a.AllocationID))
	// Anyone authenticated may join with the code.
	if _, r := e.join("Bearer "+secret, code); r.status != 200 {
		t.Errorf("join with an API key: %d %s", r.status, r.raw)
	}
}

func TestTrustedNetworks(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.AllowAnonymous = false
		c.TrustedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	e.putNode("relay-a", "eu", 0, false)
	if r := e.do("POST", "/relay/v1/allocate", "Bearer anything-at-all", `{"maxConnections":1}`); r.status != 201 {
		t.Errorf("trusted network: %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/relay/v1/allocate", "", `{"maxConnections":1}`); r.status != 401 {
		t.Errorf("no Bearer from a trusted network: %d %s", r.status, r.raw)
	}
}

// TestRateLimits: each call has its own per-player budget, joins one per
// address too; a 429 is Unity's problem JSON (15429, which Unity's SDK
// retries with backoff) with a Retry-After in whole seconds until the
// limiter has a token again, as the other APIs' 429s.
func TestRateLimits(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.RequestsPerMinute = 3
		c.JoinsPerMinutePerAddress = 2
		c.Now = func() time.Time { return time.Unix(1_700_000_000, 0) } // no refill
	})
	e.putNode("relay-a", "eu", 0, false)
	for i := range 4 {
		r := e.do("GET", "/relay/v1/regions", "", "")
		if want := map[bool]int{true: 200, false: 429}[i < 3]; r.status != want {
			t.Errorf("regions #%d: %d, want %d", i+1, r.status, want)
		}
		// 3 a minute: the next token comes 20 s after the bucket ran dry.
		if want := map[bool]string{true: "", false: "20"}[i < 3]; r.header.Get("Retry-After") != want {
			t.Errorf("regions #%d: Retry-After %q, want %q", i+1, r.header.Get("Retry-After"), want)
		}
		if r.status == 429 && r.problem(t).Code != api.RelayCodeRateLimited {
			t.Errorf("regions #%d: %s", i+1, r.raw)
		}
	}
	// Another call has its own budget; joins are limited per address too.
	for i := range 3 {
		_, r := e.join("", "BCDFGH")
		if want := map[bool]int{true: 404, false: 429}[i < 2]; r.status != want {
			t.Errorf("join #%d: %d, want %d", i+1, r.status, want)
		}
		if r.status == 429 && r.problem(t).Code != api.RelayCodeRateLimited {
			t.Errorf("join #%d: %s", i+1, r.raw)
		}
		if want := map[bool]string{true: "", false: "30"}[i < 2]; r.header.Get("Retry-After") != want {
			t.Errorf("join #%d: Retry-After %q, want %q", i+1, r.header.Get("Retry-After"), want)
		}
	}
}

func TestConcurrentJoinCode(t *testing.T) {
	e := newEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	a := e.allocate("", `{"maxConnections":1}`)
	var wg sync.WaitGroup
	codes := make([]string, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.joinCode("", a.AllocationID)
			if r.status == 200 {
				var out api.RelayResponse[api.RelayJoinCodeData]
				_ = json.Unmarshal(r.raw, &out)
				codes[i] = out.Data.JoinCode
			}
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if c == "" || c != codes[0] {
			t.Fatalf("codes %q: want one code", codes)
		}
	}
}

func TestJoinCodeAlphabet(t *testing.T) {
	s := &Server{cfg: Config{JoinCodeLength: 12, Rand: rand.Reader}}
	seen := map[byte]bool{}
	for range 200 {
		c := s.newCode()
		if len(c) != 12 {
			t.Fatalf("code %q", c)
		}
		for i := 0; i < len(c); i++ {
			seen[c[i]] = true
		}
		if got, ok := normalizeCode(strings.ToLower(c)); !ok || got != c {
			t.Fatalf("normalizeCode(%q) = %q, %v", strings.ToLower(c), got, ok)
		}
	}
	if len(seen) != len(api.RelayJoinCodeAlphabet) {
		t.Errorf("%d symbols used, want %d", len(seen), len(api.RelayJoinCodeAlphabet))
	}
}

func TestConfigDefaults(t *testing.T) {
	if DefaultJoinCodeLength != 6 || DefaultRequestsPerMinute != 60 || DefaultAllocationTTL > store.DefaultRelayTTL {
		t.Error("documented defaults changed")
	}
	if _, err := New(Config{DB: &store.DB{}, Keys: &tokens.RelayKeyring{}, JoinCodeLength: 13}); err == nil {
		t.Error("JoinCodeLength 13 accepted")
	}
}
