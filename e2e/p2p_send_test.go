package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestP2PChatSendFile: `/send PEER FILE` in one chat saves the file in
// the other's --save-dir, with progress lines and the receiver's answer;
// a second copy gets a new name; a file over --max-file-size is refused
// and nothing is left behind.
func TestP2PChatSendFile(t *testing.T) {
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--hub", "--hub-addr", "127.0.0.1:0", "--data-dir", t.TempDir())
	rf := p.readyFile
	src, bobDir, carolDir := t.TempDir(), t.TempDir(), t.TempDir()
	file := make([]byte, 2<<20)
	for i := range file {
		file[i] = byte(i*7 + i>>9)
	}
	path := filepath.Join(src, "map data.bin")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}

	alice := startChat(t, "--network", "den", "--username", "alice", "--ready-file", rf)
	aliceID := alice.wait(`joined network den as (alice~\S+)`)
	bob := startChat(t, "--network", "den", "--username", "bob", "--ready-file", rf, "--save-dir", bobDir)
	bobID := bob.wait(`joined network den as (bob~\S+)`)
	carol := startChat(t, "--network", "den", "--username", "carol", "--ready-file", rf, "--save-dir", carolDir, "--max-file-size", "1000")
	carolID := carol.wait(`joined network den as (carol~\S+)`)
	alice.wait(`\* ` + regexp.QuoteMeta(bobID) + ` joined`)
	alice.wait(`\* ` + regexp.QuoteMeta(carolID) + ` joined`)

	alice.say("/send " + bobID + " " + path)
	alice.wait(`send map data\.bin to ` + regexp.QuoteMeta(bobID) + `: 50% \(1\.0 MiB of 2\.0 MiB\)`)
	alice.wait(`send map data\.bin to ` + regexp.QuoteMeta(bobID) + `: 100% \(2\.0 MiB of 2\.0 MiB\)`)
	bob.wait(`\* receiving map data\.bin \(2\.0 MiB\) from ` + regexp.QuoteMeta(aliceID))
	bob.wait(`\* saved map data\.bin from ` + regexp.QuoteMeta(aliceID) + ` as .*map_data\.bin \(2\.0 MiB\)`)
	alice.wait(`\* ` + regexp.QuoteMeta(bobID) + ` saved map data\.bin as map_data\.bin`)
	if got, err := os.ReadFile(filepath.Join(bobDir, "map_data.bin")); err != nil || !bytes.Equal(got, file) {
		t.Fatalf("bob's copy: %d bytes, %v", len(got), err)
	}

	alice.say("/send " + bobID + " " + path)
	alice.wait(`\* ` + regexp.QuoteMeta(bobID) + ` saved map data\.bin as map_data \(1\)\.bin`)
	if got, err := os.ReadFile(filepath.Join(bobDir, "map_data (1).bin")); err != nil || !bytes.Equal(got, file) {
		t.Fatalf("bob's second copy: %d bytes, %v", len(got), err)
	}

	alice.say("/send " + carolID + " " + path)
	carol.wait(`! refused file map data\.bin from ` + regexp.QuoteMeta(aliceID) + `: 2\.0 MiB is over the limit of 1000 B`)
	alice.wait(`! ` + regexp.QuoteMeta(carolID) + `: map data\.bin refused: 2\.0 MiB is over the limit of 1000 B`)
	alice.say("/send " + carolID + " " + filepath.Join(src, "missing"))
	alice.wait(`! send: open .*missing: no such file or directory`)
	alice.say("/send " + carolID)
	alice.wait(`! usage: /send PEER FILE`)
	if ents, _ := os.ReadDir(carolDir); len(ents) != 0 {
		t.Fatalf("carol's directory holds %v after refusing", ents)
	}
	for _, c := range []*chatProc{alice, bob, carol} {
		_ = c.in.Close()
		if code := c.exit(); code != 0 {
			t.Fatalf("chat exited %d:\n%s", code, c.out.String())
		}
	}
}
