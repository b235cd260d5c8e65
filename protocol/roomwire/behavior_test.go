package roomwire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

type behaviorFile struct {
	ProtocolVersion int `json:"protocol_version"`
	Connection      struct {
		Subprotocol string `json:"subprotocol"`
	} `json:"connection"`
	Timing map[string]struct {
		Value  int    `json:"value"`
		Source string `json:"source"`
		Rule   string `json:"rule"`
	} `json:"timing"`
	ReconnectBackoff struct {
		Seconds                  []int  `json:"seconds"`
		First                    []int  `json:"first"`
		ThenEverySeconds         int    `json:"then_every_seconds"`
		Until                    string `json:"until"`
		NeverReconnectAfterCodes []int  `json:"never_reconnect_after_codes"`
	} `json:"reconnect_backoff"`
	Caps []struct {
		GoConstant string `json:"go_constant"`
		Value      int    `json:"value"`
		Source     string `json:"source"`
	} `json:"caps"`
	C1Errors []struct {
		Status  int      `json:"status"`
		Code    string   `json:"code"`
		Reasons []string `json:"reasons"`
		Action  string   `json:"action"`
	} `json:"c1_errors"`
	NodeErrors []struct {
		Code   uint8  `json:"code"`
		Name   string `json:"name"`
		Phase  string `json:"phase"`
		When   string `json:"when"`
		Action string `json:"action"`
	} `json:"node_errors"`
}

func loadBehavior(t *testing.T) behaviorFile {
	t.Helper()
	var f behaviorFile
	readJSON(t, "behavior.json", &f)
	return f
}

// maxConstants lists the names of the package's exported Max* constants by
// parsing its source, so a cap added to the code without a line in
// behavior.json fails the test.
func maxConstants(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Max") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestBehaviorCapsMatchConstants(t *testing.T) {
	goValues := map[string]int{
		"MaxSDKVersionLen":    roomwire.MaxSDKVersionLen,
		"MaxResumeTokenLen":   roomwire.MaxResumeTokenLen,
		"MaxInputLen":         roomwire.MaxInputLen,
		"MaxCustomLen":        roomwire.MaxCustomLen,
		"MaxSnapshotLen":      roomwire.MaxSnapshotLen,
		"MaxFramesPerFrame":   roomwire.MaxFramesPerFrame,
		"MaxFramesPerBatch":   roomwire.MaxFramesPerBatch,
		"MaxUsernameLen":      roomwire.MaxUsernameLen,
		"MaxReasonLen":        roomwire.MaxReasonLen,
		"MaxErrorMessageLen":  roomwire.MaxErrorMessageLen,
		"MaxResultLen":        roomwire.MaxResultLen,
		"MaxMembers":          roomwire.MaxMembers,
		"MaxConnectTicketLen": roomwire.MaxConnectTicketLen,
		"MaxPlayers":          roomwire.MaxPlayers,
		"MaxTickRate":         roomwire.MaxTickRate,
	}
	declared := maxConstants(t)
	var mapped []string
	for n := range goValues {
		mapped = append(mapped, n)
	}
	sort.Strings(mapped)
	if !slices.Equal(declared, mapped) {
		t.Fatalf("package declares %v, this test maps %v: add the new cap here and to behavior.json", declared, mapped)
	}
	var inFile []string
	for _, c := range loadBehavior(t).Caps {
		inFile = append(inFile, c.GoConstant)
		want, ok := goValues[c.GoConstant]
		if !ok {
			t.Errorf("behavior.json cap %s is not a roomwire constant", c.GoConstant)
			continue
		}
		if c.Value != want {
			t.Errorf("behavior.json %s = %d, roomwire.%s = %d", c.GoConstant, c.Value, c.GoConstant, want)
		}
		if !strings.HasPrefix(c.Source, "seed") && c.Source != "switchboard" {
			t.Errorf("%s: source %q, want seed or switchboard", c.GoConstant, c.Source)
		}
	}
	sort.Strings(inFile)
	if !slices.Equal(inFile, declared) {
		t.Errorf("behavior.json caps %v, want every Max constant %v once", inFile, declared)
	}
}

func TestBehaviorNodeErrorsMatchCodes(t *testing.T) {
	consts := map[string]uint8{
		"ticket_invalid": roomwire.CodeTicketInvalid, "ticket_expired": roomwire.CodeTicketExpired,
		"room_not_found": roomwire.CodeRoomNotFound, "room_full": roomwire.CodeRoomFull,
		"seat_taken": roomwire.CodeSeatTaken, "protocol_unsupported": roomwire.CodeProtocolUnsupported,
		"rate_limited": roomwire.CodeRateLimited, "kicked": roomwire.CodeKicked,
		"room_closed": roomwire.CodeRoomClosed, "node_draining": roomwire.CodeNodeDraining,
		"resume_rejected": roomwire.CodeResumeRejected,
	}
	actions := []string{"retry_c1", "end", "resume"}
	f := loadBehavior(t)
	if len(f.NodeErrors) != 11 {
		t.Fatalf("%d node errors, want 11", len(f.NodeErrors))
	}
	for i, e := range f.NodeErrors {
		if int(e.Code) != i+1 {
			t.Errorf("node_errors[%d].code = %d, want %d", i, e.Code, i+1)
		}
		if got := roomwire.CodeName(e.Code); got != e.Name {
			t.Errorf("code %d: name %q, CodeName gives %q", e.Code, e.Name, got)
		}
		if consts[e.Name] != e.Code {
			t.Errorf("code %d %s: Go constant is %d", e.Code, e.Name, consts[e.Name])
		}
		if !slices.Contains(actions, e.Action) {
			t.Errorf("code %d: action %q, want one of %v", e.Code, e.Action, actions)
		}
		if e.When == "" || e.Phase == "" {
			t.Errorf("code %d: when or phase missing", e.Code)
		}
	}
	if got := roomwire.CodeName(12); got != "unknown" {
		t.Errorf("CodeName(12) = %q, want unknown", got)
	}
	// The seed: never reconnect after kicked, room_closed, node_draining, seat_taken.
	never := f.ReconnectBackoff.NeverReconnectAfterCodes
	for _, c := range []uint8{roomwire.CodeSeatTaken, roomwire.CodeKicked, roomwire.CodeRoomClosed, roomwire.CodeNodeDraining} {
		if !slices.Contains(never, int(c)) {
			t.Errorf("never_reconnect_after_codes %v lacks %d", never, c)
		}
		if a := f.NodeErrors[c-1].Action; a != "end" {
			t.Errorf("code %d: action %q, want end", c, a)
		}
	}
}

func TestBehaviorConsistent(t *testing.T) {
	f := loadBehavior(t)
	if f.ProtocolVersion != 1 || f.Connection.Subprotocol != "im.game.v1" {
		t.Errorf("protocol_version %d subprotocol %q, want 1 im.game.v1", f.ProtocolVersion, f.Connection.Subprotocol)
	}
	// Backoff: the listed first waits, then then_every_seconds forever.
	b := f.ReconnectBackoff
	if len(b.Seconds) <= len(b.First) || !slices.Equal(b.Seconds[:len(b.First)], b.First) {
		t.Fatalf("backoff seconds %v do not start with first %v", b.Seconds, b.First)
	}
	for _, s := range b.Seconds[len(b.First):] {
		if s != b.ThenEverySeconds {
			t.Errorf("backoff seconds %v: after %v every wait must be %d", b.Seconds, b.First, b.ThenEverySeconds)
		}
	}
	if b.Until != "room.reconnect_window_seconds" {
		t.Errorf("backoff until %q", b.Until)
	}
	for name, c := range f.Timing {
		if c.Value <= 0 || c.Rule == "" || (c.Source != "seed" && c.Source != "switchboard") {
			t.Errorf("timing %s = %+v: want a positive value, a rule and a source", name, c)
		}
	}
	// The HTTP status of each C1 error code, as the spec's error JSON defines.
	status := map[string]int{
		"invalid_argument": 400, "unauthenticated": 401, "permission_denied": 403,
		"not_found": 404, "conflict": 409, "rate_limited": 429, "internal": 500, "unavailable": 503,
	}
	for _, e := range f.C1Errors {
		if status[e.Code] != e.Status {
			t.Errorf("C1 error %s with status %d, want %d", e.Code, e.Status, status[e.Code])
		}
		if e.Action == "" {
			t.Errorf("C1 error %d %s %v: no action", e.Status, e.Code, e.Reasons)
		}
	}
}
