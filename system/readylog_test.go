package system_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/system"
)

// TestReadyLogNamesRunningRoles: the "switchboard ready" line of a
// control-only process names the API and no node. It used to print
// node_ws="" node_id="".
func TestReadyLogNamesRunningRoles(t *testing.T) {
	var buf lockedBuffer
	cfg := testConfig(t.TempDir())
	cfg.Roles = system.RoleControl
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	s := start(t, cfg)
	var line string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(l, `msg="switchboard ready"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no ready line in:\n%s", buf.String())
	}
	if !strings.Contains(line, "api="+s.Ready().API) || strings.Contains(line, "node_") || strings.Contains(line, `=""`) {
		t.Errorf("ready line %q, want the api and no empty or node attribute", line)
	}
}
