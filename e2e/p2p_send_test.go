package e2e_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
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

// TestP2PChatReceiveHostile: a peer speaking the /send messages from the
// SDK with a hostile name, more bytes than announced, or a wrong
// checksum gets nothing saved outside the directory, nor a partial file.
func TestP2PChatReceiveHostile(t *testing.T) {
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--hub", "--hub-addr", "127.0.0.1:0", "--data-dir", t.TempDir())
	dir := t.TempDir()
	save := filepath.Join(dir, "in")
	if err := os.Mkdir(save, 0o755); err != nil {
		t.Fatal(err)
	}
	bob := startChat(t, "--network", "den", "--username", "bob", "--ready-file", p.readyFile, "--save-dir", save)
	bobID := bob.wait(`joined network den as (bob~\S+)`)

	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := be.CreateAuthToken(ctx, "mallory", 0)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := session.Login(ctx, p.ready.API, "mallory", auth, nil)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := p2p.Join(ctx, sc, p2p.JoinRequest{Network: "den"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mallory.Close()
	<-mallory.Registered()
	bob.wait(`\* ` + regexp.QuoteMeta(mallory.ID()) + ` joined`)
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(mallory.Peers(), bobID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("mallory does not see bob")
		}
	}
	send := func(header string, payload []byte, pairs ...string) {
		t.Helper()
		var ps []p2p.Pair
		for i := 0; i < len(pairs); i += 2 {
			ps = append(ps, p2p.Pair{Key: pairs[i], Value: pairs[i+1]})
		}
		if err := mallory.SendReliable(ctx, bobID, p2p.Ch1, p2p.Envelope{Header: header, Pairs: ps, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	// More bytes than announced: dropped, nothing left.
	send("file-begin", nil, "id", "1", "name", "../../evil.sh", "size", "10")
	send("file-data", make([]byte, 20), "id", "1")
	bob.wait(`! file \.\./\.\./evil\.sh from ` + regexp.QuoteMeta(mallory.ID()) + ` dropped: more bytes than announced`)
	// A wrong checksum: dropped, nothing left.
	send("file-begin", nil, "id", "2", "name", "x.txt", "size", "5")
	send("file-data", []byte("hello"), "id", "2")
	send("file-end", nil, "id", "2", "sha256", sum([]byte("HELLO")))
	bob.wait(`! file x\.txt from ` + regexp.QuoteMeta(mallory.ID()) + ` dropped: the file arrived incomplete or altered`)
	// A path in the name: saved inside the directory under its last element.
	send("file-begin", nil, "id", "3", "name", "../../../tmp/.profile", "size", "3")
	send("file-data", []byte("abc"), "id", "3")
	send("file-end", nil, "id", "3", "sha256", sum([]byte("abc")))
	bob.wait(`\* saved \.\./\.\./\.\./tmp/\.profile from ` + regexp.QuoteMeta(mallory.ID()) + ` as .*profile \(3 B\)`)

	ents, _ := os.ReadDir(save)
	if len(ents) != 1 || ents[0].Name() != "profile" {
		t.Fatalf("the save directory holds %v, want only profile", ents)
	}
	if outside, _ := os.ReadDir(dir); len(outside) != 1 {
		t.Fatalf("files next to the save directory: %v", outside)
	}
	_ = bob.in.Close()
	if code := bob.exit(); code != 0 {
		t.Fatalf("chat exited %d", code)
	}
}
