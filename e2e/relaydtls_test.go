package e2e_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRelayChatDTLS: two terminals chat through `switchboard dev`'s relay
// with both ends on DTLS (`--transport dtls`): the host prints its join
// code and the DTLS endpoint, the joiner connects, lines go both ways,
// the host sees the peer join and leave, and both exit 0 at end of input.
func TestRelayChatDTLS(t *testing.T) {
	help, err := exec.Command(binary, "relay", "host", "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(help), "dtls") {
		t.Fatalf("relay host --help does not offer dtls:\n%s", help)
	}
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--relay", "127.0.0.1:0", "--relay-ws", "127.0.0.1:0")
	rf := p.readyFile

	host := startRelayCLI(t, "host", "--transport", "dtls", "--ready-file", rf)
	code := host.wait(host.log, `join code ([6789BCDFGHJKLMNPQRTW]{6}) \(dtls 127\.0\.0\.1:\d+\)`)
	peer := startRelayCLI(t, "join", code, "--transport", "dtls", "--ready-file", rf)
	id := peer.wait(peer.log, `joined `+code+` \(dtls 127\.0\.0\.1:\d+\) as peer (`+uuidRE+`)`)
	host.wait(host.log, `\* peer `+id+` joined`)

	peer.say("hello host, over DTLS")
	host.wait(host.out, `(?m)^hello host, over DTLS$`)
	host.say("hello peer")
	peer.wait(peer.out, `(?m)^hello peer$`)

	_ = peer.in.Close()
	if code := peer.exit(); code != 0 {
		t.Fatalf("join at end of input exited %d", code)
	}
	host.wait(host.log, `\* peer `+id+` left`)
	_ = host.in.Close()
	if code := host.exit(); code != 0 {
		t.Fatalf("host at end of input exited %d", code)
	}
	p.stop(10 * time.Second)
}
