package bench_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoServerPackage: bench is client code, like the SDKs it drives;
// it must not link a server package (the foundation issue took package
// tokens out of it). The building blocks of the UDP channel that client
// and node share (issue 12: "the same building blocks as the node") and
// the impairment proxy of --loss and --jitter (and its internal/duequeue) are allowed, and the p2p
// datagram keys (internal/p2pseal) the SDK and the hub share.
func TestLinksNoServerPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/switchboardgg/switchboard/"
	server := []string{"tokens", "store", "backbone", "control", "node", "rooms", "system", "internal/"}
	shared := map[string]bool{"internal/sealed": true, "internal/kcploop": true, "internal/udpio": true, "internal/impair": true, "internal/duequeue": true, "internal/p2pseal": true}
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, mod)
		if !ok || shared[rest] {
			continue
		}
		for _, s := range server {
			if rest == s || strings.HasPrefix(rest, strings.TrimSuffix(s, "/")+"/") {
				t.Errorf("bench links the server package %s", pkg)
			}
		}
	}
}
