package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestSweepStale: the temporary directories of nodes whose process is gone are
// removed; this node's, a running node's and anything not a sandbox's are kept.
func TestSweepStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = running.Process.Kill(); _ = running.Wait() }()
	dir := t.TempDir()
	name := func(pid int) string { return "agentmux-hosts.w-pid" + strconv.Itoa(pid) + "-123" }
	gone := filepath.Join(dir, name(dead.Process.Pid))
	keep := []string{name(os.Getpid()), name(running.Process.Pid), "agentmux-hosts.w-456", "other-pid1-1"}
	for _, d := range append(keep, filepath.Base(gone)) {
		if err := os.MkdirAll(filepath.Join(dir, d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := SweepStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{gone}) {
		t.Errorf("removed %v, want only %s", removed, gone)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", gone, err)
	}
	for _, d := range keep {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	// A sandbox's own directory carries this process's pid.
	sb := New("hosts.w", Policy{Temp: true})
	defer sb.Close()
	if _, temp, err := sb.ready(); err != nil && ABI() > 0 {
		t.Fatal(err)
	} else if temp != "" {
		if pid, ok := tempOwner(filepath.Base(temp)); !ok || pid != os.Getpid() {
			t.Errorf("the sandbox's TMPDIR %s names pid %d, want %d", temp, pid, os.Getpid())
		}
	}
}
