package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ sent, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`..\..\windows\system.ini`, "system.ini"},
		{"..", "file"},
		{".bashrc", "bashrc"},
		{"-rf", "rf"},
		{"--checkpoint-action=exec=sh x.sh", "checkpoint-action_exec_sh_x.sh"},
		{".-.-x", "x"},
		{"", "file"},
		{"a b;rm -rf ~.txt", "a_b_rm_-rf__.txt"},
		{"é\x00\n.bin", "____.bin"},
		{strings.Repeat("x", 300) + ".tar", strings.Repeat("x", 96) + ".tar"},
	} {
		if got := safeName(tc.sent); got != tc.want {
			t.Errorf("safeName(%q) = %q, want %q", tc.sent, got, tc.want)
		}
	}
}

// TestCreateSafeNeverOverwrites: a taken name gets " (n)", a symbolic
// link in the directory is not followed, and nothing lands outside it.
func TestCreateSafeNeverOverwrites(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sent, want string }{
		{"a.txt", "a (1).txt"},
		{"a.txt", "a (2).txt"},
		{"../a.txt", "a (3).txt"},
		{"link", "link (1)"},
	} {
		f, path, err := createSafe(dir, tc.sent)
		if err != nil {
			t.Fatalf("createSafe(%q): %v", tc.sent, err)
		}
		_ = f.Close()
		if path != filepath.Join(dir, tc.want) {
			t.Errorf("createSafe(%q) made %s, want %s", tc.sent, path, filepath.Join(dir, tc.want))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "mine" {
		t.Errorf("a.txt was overwritten: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("a file was created outside the directory: %v", ents)
	}
}

// TestStalledFilesMakeRoom: files announced and then starved of data
// for fileStall are dropped (and deleted) when a new file needs their
// place; one that got data lately stays.
func TestStalledFilesMakeRoom(t *testing.T) {
	dir := t.TempDir()
	fs := &files{say: t.Logf, in: map[string]*incoming{}}
	now := time.Now()
	for i, last := range []time.Time{now.Add(-2 * fileStall), now.Add(-fileStall), now.Add(-fileStall / 2)} {
		f, path, err := createSafe(dir, "f.bin")
		if err != nil {
			t.Fatal(err)
		}
		fs.in[strconv.Itoa(i)] = &incoming{from: "mallory~x", name: "f.bin", f: f, path: path, last: last}
	}
	fs.dropStalled(now)
	if len(fs.in) != 1 || fs.in["2"] == nil {
		t.Fatalf("left %d incoming files: %v", len(fs.in), fs.in)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the dropped files stay on disk: %v", ents)
	}
	fs.abandon("2", fs.in["2"])
}
