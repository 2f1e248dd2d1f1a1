package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestAnnouncedPortsAreThoseOfLiveProcesses checks the registry sandboxes read: a
// port is there from Announce to its release, a dead process's is passed over and swept,
// and a directory others may write is trusted by neither side.
func TestAnnouncedPortsAreThoseOfLiveProcesses(t *testing.T) {
	root := t.TempDir()
	release, err := announce(root, 7001)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := announce(root, 7002); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, portsPrefix+strconv.Itoa(os.Getuid()))
	stale := filepath.Join(dir, "7003-"+strconv.Itoa(dead.Process.Pid))
	for _, name := range []string{stale, filepath.Join(dir, "junk"), filepath.Join(dir, "0-1")} {
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := announced(root); !slices.Equal(got, []uint16{7001, 7002}) {
		t.Errorf("announced %v; want 7001 7002 (7003's process is gone)", got)
	}
	release()
	if got := announced(root); !slices.Equal(got, []uint16{7002}) {
		t.Errorf("announced %v after 7001's release; want 7002", got)
	}
	if _, err := announce(root, 7004); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead process's entry was not swept: %v", err)
	}

	// A directory anyone may write proves nothing: another user could have put any
	// port there, or taken one out.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := announced(root); len(got) != 0 {
		t.Errorf("announced %v from a directory anyone writes; want none", got)
	}
	if _, err := announce(root, 7005); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("announcing into a directory anyone writes: %v; want an error saying to remove it", err)
	}
}

// TestRebuiltSandboxKeepsAnOlderBuildWhileItsProgramRuns checks that a build of a
// sandbox, replaced when a port was announced, stays while a program it started runs
// (its thread going would kill it), and goes once it has ended.
func TestRebuiltSandboxKeepsAnOlderBuildWhileItsProgramRuns(t *testing.T) {
	if Mechanism() == "" {
		t.Skip("no sandbox on this system")
	}
	sb := New("hosts.rebuilt", Policy{Write: []string{t.TempDir()}, ConnectDeny: []uint16{4222}, Temp: true})
	defer sb.Close()
	running := exec.Command("sleep", "30")
	if err := sb.Start(running); err != nil {
		t.Fatal(err)
	}
	first := sb.domain
	release, err := Announce(4223)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	second := built(t, sb)
	if second == first || !slices.Contains(second.ports, 4223) || !slices.Equal(sb.older, []*domain{first}) {
		t.Fatalf("after the announcement: a new build %v denying %v, older %v; want a new one denying 4223, the first kept", second != first, second.ports, sb.older)
	}
	if err := running.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = running.Wait()
	release()
	built(t, sb)
	if len(sb.older) != 0 {
		t.Errorf("older builds %v; want none, the first's program having ended and the second having started none", sb.older)
	}
	for i, d := range []*domain{first, second} {
		select {
		case <-d.quit:
		default:
			t.Errorf("build %d's thread was not told to end", i+1)
		}
	}
}

// built is sb's build as its next start would have it, no start counted.
func built(t *testing.T, sb *Sandbox) *domain {
	t.Helper()
	d, _, err := sb.ready()
	if err != nil {
		t.Fatal(err)
	}
	sb.mu.Lock()
	d.starting--
	sb.mu.Unlock()
	return d
}
