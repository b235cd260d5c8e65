package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
)

// TestDevDiskFull runs dev with its data dir on a small tmpfs in a mount
// namespace of its own and fills the disk. nats-server keeps a stream's
// write error until restart, so dev must say so and exit non-zero (for its
// supervisor to restart it), and a restart once space is back must find
// the data and accept writes. Before, dev kept running with /healthz at
// 200 while every create and login failed.
func TestDevDiskFull(t *testing.T) {
	holder, dir := tmpfsNamespace(t, "32m")
	ns := []string{"nsenter", "-t", strconv.Itoa(holder), "-m", "--"}
	args := []string{"dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--nats", "127.0.0.1:0", "--data-dir", dir}
	p := startWrapped(t, ns, args...)
	ctx := testContext(t, 120*time.Second)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: 2, StartMode: "auto"})
	if err != nil {
		t.Fatalf("create room with room on disk: %v", err)
	}
	if code := status(t, p.ready.API+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with room on disk: %d", code)
	}

	// The test reaches the tmpfs through the holder's root.
	filler := filepath.Join("/proc", strconv.Itoa(holder), "root", dir, "filler")
	fillDisk(t, filler)
	// Writes fail from now on; the store probe finds out within seconds,
	// and the process exits.
	var failedWrite error
	for i := 0; failedWrite == nil && i < 50; i++ {
		select {
		case <-p.done:
			failedWrite = errors.New("exited")
			continue
		default:
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, failedWrite = be.CreateRoom(wctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: 2, StartMode: "auto"})
		cancel()
	}
	if failedWrite == nil {
		t.Fatal("50 room creations on a full disk all succeeded")
	}
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("dev still runs 60 s after its disk filled:\n%s", p.out.String())
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("dev on a full disk: exit %v, want non-zero\n%s", p.err, p.out.String())
	}
	if out := p.out.String(); !strings.Contains(out, "restart") || !strings.Contains(out, "no space left on device") {
		t.Errorf("dev's last words do not say that the disk is full and a restart is needed:\n%s", out)
	}

	// Space returns; the supervisor restarts dev: the room is still there
	// and writes work.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startWrapped(t, ns, args...)
	be, err = backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := be.GetRoom(ctx, before.RoomID); err != nil {
		t.Errorf("room created before the disk filled, after the restart: %v", err)
	}
	if _, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: 2, StartMode: "auto"}); err != nil {
		t.Errorf("create room after the restart: %v", err)
	}
	for _, u := range []string{p.ready.API + "/healthz", p.ready.Admin + "/healthz"} {
		if code := status(t, u); code != http.StatusOK {
			t.Errorf("%s after the restart: %d, want 200", u, code)
		}
	}
	p.stop(10 * time.Second)
}

// tmpfsNamespace mounts a tmpfs of size on a new directory in a new mount
// namespace, held by a sleeping process, and returns that process's pid
// and the directory. It skips when this is not possible here.
func tmpfsNamespace(t *testing.T, size string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: a tmpfs in a mount namespace needs root")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s(1) is not installed (util-linux)", tool)
		}
	}
	if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("skipped: unshare -m does not work here: %v %s", err, out)
	}
	dir := t.TempDir()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size="$1",mode=0700 tmpfs "$2" && echo mounted && exec sleep 600`, "sh", size, dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "mounted\n" {
		t.Fatalf("mount tmpfs: %q %v", line, err)
	}
	return cmd.Process.Pid, dir
}

// fillDisk writes path until its file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			return
		}
	}
}

func status(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
