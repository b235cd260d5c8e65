package rooms_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKnowsNoTokenFormat: the engine gets plain values (ResumeKey); the
// transport signs and verifies the tokens. Until the foundation issue rooms
// signed resume tokens itself.
func TestKnowsNoTokenFormat(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "github.com/switchboardgg/switchboard/tokens", "github.com/switchboardgg/switchboard/backbone",
			"github.com/switchboardgg/switchboard/store", "net":
			t.Errorf("rooms links %s", pkg)
		}
	}
}
