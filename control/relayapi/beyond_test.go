package relayapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Three principals: behind a trusted network every Bearer is a player of
// its own (the hash of an opaque token is its subject).
const (
	alice = "Bearer alice"
	bob   = "Bearer bob"
	carol = "Bearer carol"
)

// newPlayersEnv is an env whose callers are told apart by their Bearer,
// with a clock the test moves.
func newPlayersEnv(t *testing.T, tweak ...func(*Config)) (*env, *atomic.Int64) {
	var off atomic.Int64
	return newEnv(t, append([]func(*Config){func(c *Config) {
		c.AllowAnonymous = false
		c.TrustedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		c.Now = func() time.Time { return time.Now().Add(time.Duration(off.Load())) }
	}}, tweak...)...), &off
}

func wantProblem(t *testing.T, what string, r reply, status, code int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.raw, status)
	}
	if p := r.problem(t); p.Code != code || p.Status != status {
		t.Fatalf("%s: problem %+v, want code %d", what, p, code)
	}
}

func (e *env) status(auth, code string) (api.RelayJoinCodeStatus, reply) {
	r := e.do("GET", "/relay/v1/joincode/"+code, auth, "")
	var out api.RelayResponse[api.RelayJoinCodeStatusData]
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.raw, &out); err != nil {
			e.t.Fatal(err)
		}
	}
	return out.Data.JoinCode, r
}

func (e *env) claim(auth, newID, code, prevID string) reply {
	return e.do("POST", "/relay/v1/joincode", auth,
		`{"allocationId":"`+newID+`","joinCode":"`+code+`","previousAllocationId":"`+prevID+`"}`)
}

// release does what the relay node's OnRelease path does when an
// allocation ends.
func (e *env) release(a api.RelayAllocation) {
	e.t.Helper()
	if err := e.db.ReleaseRelayAllocation(context.Background(), hex.EncodeToString(a.AllocationIDBytes)); err != nil {
		e.t.Fatal(err)
	}
}

func TestIdleTimeoutOverride(t *testing.T) {
	e := newEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	idleOf := func(blob []byte) time.Duration {
		t.Helper()
		c, err := e.keys.Open(blob)
		if err != nil {
			t.Fatal(err)
		}
		return c.IdleTimeout
	}
	h := e.allocate("", `{"maxConnections":2,"idleTimeoutSeconds":300}`)
	if got := idleOf(h.ConnectionData); got != 300*time.Second {
		t.Errorf("host blob idle timeout %s, want 300s", got)
	}
	if got := idleOf(e.allocate("", `{"maxConnections":2}`).ConnectionData); got != 0 {
		t.Errorf("default idle timeout %s, want 0 (the node's)", got)
	}
	code := codeOf(t, e.joinCode("", h.AllocationID))
	j, r := e.join("", code)
	if r.status != 200 {
		t.Fatalf("join: %d %s", r.status, r.raw)
	}
	if got := idleOf(j.ConnectionData); got != 0 {
		t.Errorf("joiner idle timeout %s, want 0", got)
	}
	r = e.do("POST", "/relay/v1/join", "", `{"joinCode":"`+code+`","idleTimeoutSeconds":45}`)
	var out api.RelayResponse[api.RelayAllocationData]
	if err := json.Unmarshal(r.raw, &out); err != nil || r.status != 200 {
		t.Fatalf("join with idle timeout: %d %s", r.status, r.raw)
	}
	if got := idleOf(out.Data.Allocation.ConnectionData); got != 45*time.Second {
		t.Errorf("joiner idle timeout %s, want 45s", got)
	}
	for _, body := range []string{`{"maxConnections":2,"idleTimeoutSeconds":301}`, `{"maxConnections":2,"idleTimeoutSeconds":-1}`} {
		wantProblem(t, body, e.do("POST", "/relay/v1/allocate", "", body), 400, api.RelayCodeInvalidRequest)
	}
	wantProblem(t, "join over the cap", e.do("POST", "/relay/v1/join", "", `{"joinCode":"`+code+`","idleTimeoutSeconds":100000}`),
		400, api.RelayCodeInvalidRequest)

	// The cap is the deployment's; negative refuses any override.
	e2 := newEnv(t, func(c *Config) { c.MaxIdleTimeout = time.Hour })
	e2.putNode("relay-a", "eu", 0, false)
	e2.allocate("", `{"maxConnections":2,"idleTimeoutSeconds":3600}`)
	e3 := newEnv(t, func(c *Config) { c.MaxIdleTimeout = -1 })
	e3.putNode("relay-a", "eu", 0, false)
	wantProblem(t, "no override allowed", e3.do("POST", "/relay/v1/allocate", "", `{"maxConnections":2,"idleTimeoutSeconds":1}`),
		400, api.RelayCodeInvalidRequest)
	e3.allocate("", `{"maxConnections":2,"idleTimeoutSeconds":0}`)
	if _, err := New(Config{DB: e.db, Keys: e.keys, MaxIdleTimeout: 65536 * time.Second}); err == nil {
		t.Error("MaxIdleTimeout over 65535 s accepted")
	}
}

func TestJoinCodeStatusAndRevoke(t *testing.T) {
	e, _ := newPlayersEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	h := e.allocate(alice, `{"maxConnections":2}`)
	code := codeOf(t, e.joinCode(alice, h.AllocationID))

	// Any authenticated caller reads the status, in any case.
	for _, who := range []string{alice, bob} {
		st, r := e.status(who, code)
		if r.status != 200 || st.JoinCode != code || st.Status != api.RelayJoinCodeActive ||
			st.HostAllocationID != h.AllocationID || st.Region != "eu" || st.ExpiresAt.IsZero() || st.HostMigration {
			t.Fatalf("status as %s: %d %+v %s", who, r.status, st, r.raw)
		}
	}
	if _, r := e.status(bob, "bcdfgh"); r.status != 404 {
		t.Errorf("status of an unknown code: %d %s", r.status, r.raw)
	}
	wantProblem(t, "malformed code", e.do("GET", "/relay/v1/joincode/AB", bob, ""), 404, api.RelayCodeJoinCodeNotFound)
	wantProblem(t, "no credentials", e.do("GET", "/relay/v1/joincode/"+code, "", ""), 401, api.RelayCodeUnauthorized)
	wantProblem(t, "nested path", e.do("GET", "/relay/v1/joincode/"+code+"/x", bob, ""), 404, api.RelayCodeEntityNotFound)
	wantProblem(t, "PUT", e.do("PUT", "/relay/v1/joincode/"+code, bob, ""), 405, api.RelayCodeMethodNotAllowed)

	// Only its creator revokes it; then it is gone for everyone.
	wantProblem(t, "revoke by another", e.do("DELETE", "/relay/v1/joincode/"+code, bob, ""), 403, api.RelayCodeForbidden)
	if _, r := e.join(bob, code); r.status != 200 {
		t.Fatalf("join after a refused revoke: %d %s", r.status, r.raw)
	}
	if r := e.do("DELETE", "/relay/v1/joincode/"+code, alice, ""); r.status != 204 || len(r.raw) != 0 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	wantProblem(t, "status after revoke", e.do("GET", "/relay/v1/joincode/"+code, bob, ""), 404, api.RelayCodeJoinCodeNotFound)
	_, r := e.join(bob, code)
	wantProblem(t, "join after revoke", r, 404, api.RelayCodeJoinCodeNotFound)
	wantProblem(t, "revoke again", e.do("DELETE", "/relay/v1/joincode/"+code, alice, ""), 404, api.RelayCodeJoinCodeNotFound)

	// The host lives on and gets a new code.
	code2 := codeOf(t, e.joinCode(alice, h.AllocationID))
	if code2 == code {
		t.Fatalf("the revoked code %s came back", code)
	}
	if _, r := e.join(bob, code2); r.status != 200 {
		t.Fatalf("join the new code: %d %s", r.status, r.raw)
	}
	// A released host's code is unknown.
	e.release(h)
	wantProblem(t, "status after release", e.do("GET", "/relay/v1/joincode/"+code2, bob, ""), 404, api.RelayCodeJoinCodeNotFound)
}

// TestHostMigration: a dead host's code is held for its grace period; the
// first peer that joined with it and claims it becomes its host, the others
// are refused and join the new host with the same code.
func TestHostMigration(t *testing.T) {
	e, clock := newPlayersEnv(t)
	e.putNode("relay-a", "eu", 0, false)
	h := e.allocate(alice, `{"maxConnections":4,"hostMigration":true}`)
	code := codeOf(t, e.joinCode(alice, h.AllocationID))
	if st, _ := e.status(bob, code); !st.HostMigration {
		t.Fatalf("status %+v, want hostMigration", st)
	}
	jb, r := e.join(bob, code)
	if r.status != 200 {
		t.Fatal(r.status, string(r.raw))
	}
	jc, _ := e.join(carol, code)
	nb := e.allocate(bob, `{"maxConnections":4,"hostMigration":true}`)
	nc := e.allocate(carol, `{"maxConnections":4}`)

	// While the host lives, a claim is refused: retry.
	wantProblem(t, "claim before the host died", e.claim(bob, nb.AllocationID, code, jb.AllocationID), 409, api.RelayCodeJoinCodeNotHeld)

	e.release(h) // the relay reports the host's death
	st, r := e.status(bob, code)
	if r.status != 200 || st.Status != api.RelayJoinCodeMigrating || st.HostAllocationID != h.AllocationID ||
		!st.ExpiresAt.After(time.Now()) || st.ExpiresAt.After(time.Now().Add(DefaultMigrationGrace+time.Second)) {
		t.Fatalf("status after the host's death: %d %+v", r.status, st)
	}
	_, r = e.join(carol, code)
	wantProblem(t, "join while migrating", r, 409, api.RelayCodeJoinCodeMigrating)

	// Refused claims: another's joiner allocation, a joiner allocation as
	// the new host, someone else's new allocation, a half-claim.
	wantProblem(t, "claim with another's joiner", e.claim(carol, nc.AllocationID, code, jb.AllocationID), 403, api.RelayCodeForbidden)
	wantProblem(t, "claim for a joiner allocation", e.claim(bob, jb.AllocationID, code, jb.AllocationID), 404, api.RelayCodeAllocationNotFound)
	wantProblem(t, "claim for another's allocation", e.claim(carol, nb.AllocationID, code, jc.AllocationID), 404, api.RelayCodeAllocationNotFound)
	wantProblem(t, "half a claim", e.do("POST", "/relay/v1/joincode", bob, `{"allocationId":"`+nb.AllocationID+`","joinCode":"`+code+`"}`),
		400, api.RelayCodeInvalidRequest)

	// The first claim wins, and asking again is fine; the second loses.
	if got := codeOf(t, e.claim(bob, nb.AllocationID, code, jb.AllocationID)); got != code {
		t.Fatalf("claim gave %q, want %q", got, code)
	}
	if got := codeOf(t, e.claim(bob, nb.AllocationID, code, jb.AllocationID)); got != code {
		t.Fatalf("repeated claim gave %q", got)
	}
	wantProblem(t, "second claim", e.claim(carol, nc.AllocationID, code, jc.AllocationID), 409, api.RelayCodeJoinCodeTaken)
	if got := codeOf(t, e.joinCode(bob, nb.AllocationID)); got != code {
		t.Fatalf("the new host's join code is %q, want %q", got, code)
	}

	// The others re-join with the same code, on the new host.
	st, _ = e.status(carol, code)
	if st.Status != api.RelayJoinCodeActive || st.HostAllocationID != nb.AllocationID {
		t.Fatalf("status after the claim: %+v", st)
	}
	jc2, r := e.join(carol, code)
	if r.status != 200 || string(jc2.HostConnectionData) != string(nb.ConnectionData) {
		t.Fatalf("re-join: %d %s", r.status, r.raw)
	}
	conn, err := e.keys.Open(jc2.ConnectionData)
	if err != nil || conn.HostAllocationID != [16]byte(nb.AllocationIDBytes) {
		t.Fatalf("re-joined allocation's host %x, %v; want %s", conn.HostAllocationID, err, nb.AllocationID)
	}
	// The new creator may revoke it; the old one may not.
	wantProblem(t, "revoke by the dead host's owner", e.do("DELETE", "/relay/v1/joincode/"+code, alice, ""), 403, api.RelayCodeForbidden)

	// The new host opted in too: it migrates again, to carol, once.
	e.release(nb)
	nc2 := e.allocate(carol, `{"maxConnections":4}`)
	if got := codeOf(t, e.claim(carol, nc2.AllocationID, code, jc2.AllocationID)); got != code {
		t.Fatalf("second migration gave %q", got)
	}
	// carol's host did not opt in: a claim is refused at once, and its
	// code dies with it.
	nb3 := e.allocate(bob, `{"maxConnections":4}`)
	wantProblem(t, "claim of a code without migration", e.claim(bob, nb3.AllocationID, code, jb.AllocationID), 404, api.RelayCodeJoinCodeNotFound)
	e.release(nc2)
	wantProblem(t, "without opt-in the code dies", e.do("GET", "/relay/v1/joincode/"+code, bob, ""), 404, api.RelayCodeJoinCodeNotFound)

	// A code nobody claims dies at the end of its grace period.
	h2 := e.allocate(alice, `{"maxConnections":4,"hostMigration":true}`)
	code2 := codeOf(t, e.joinCode(alice, h2.AllocationID))
	jb2, _ := e.join(bob, code2)
	e.release(h2)
	if st, _ := e.status(bob, code2); st.Status != api.RelayJoinCodeMigrating {
		t.Fatalf("status %+v", st)
	}
	clock.Add(int64(DefaultMigrationGrace + time.Second))
	wantProblem(t, "after the grace period", e.do("GET", "/relay/v1/joincode/"+code2, bob, ""), 404, api.RelayCodeJoinCodeNotFound)
	nb2 := e.allocate(bob, `{"maxConnections":4}`)
	wantProblem(t, "claim after the grace period", e.claim(bob, nb2.AllocationID, code2, jb2.AllocationID), 404, api.RelayCodeJoinCodeNotFound)
}

// TestJoinCodeOraclesRateLimited: a revoke (403 for another's code, 404
// for none) and a migration claim (404 against 403 or 409) tell whether a
// code exists, as a status does: they count against the per-address join
// limit too, so that no route walks the code space faster than joins.
func TestJoinCodeOraclesRateLimited(t *testing.T) {
	e, _ := newPlayersEnv(t, func(c *Config) { c.JoinsPerMinutePerAddress = 2 })
	e.putNode("relay-a", "eu", 0, false)
	h := e.allocate(alice, `{"maxConnections":2,"hostMigration":true}`)
	code := codeOf(t, e.joinCode(alice, h.AllocationID))
	wantProblem(t, "revoke by another #1", e.do("DELETE", "/relay/v1/joincode/"+code, bob, ""), 403, api.RelayCodeForbidden)
	wantProblem(t, "revoke of no code #2", e.do("DELETE", "/relay/v1/joincode/BCDFGH", bob, ""), 404, api.RelayCodeJoinCodeNotFound)
	wantProblem(t, "revoke #3", e.do("DELETE", "/relay/v1/joincode/"+code, bob, ""), 429, api.RelayCodeRateLimited)
	nb := e.allocate(bob, `{"maxConnections":2}`)
	wantProblem(t, "claim past the limit", e.claim(bob, nb.AllocationID, code, nb.AllocationID), 429, api.RelayCodeRateLimited)
	wantProblem(t, "status past the limit", e.do("GET", "/relay/v1/joincode/"+code, bob, ""), 429, api.RelayCodeRateLimited)
}
