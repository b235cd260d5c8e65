package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
