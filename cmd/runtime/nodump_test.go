//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
)

// procProbe is an agent that reads what it can of every process above it, as any
// process of the node's user could: each ancestor's environment and memory.
const procProbe = `import json, os, sys
sys.stdin.readline()
seen, pid = [], os.getppid()
while pid > 1:
    entry = {"pid": pid}
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = f.read()
        entry["environ"] = "read"
        entry["secret"] = b"T_NODE_SECRET=" in env
    except OSError as e:
        entry["environ"] = e.strerror
    try:
        with open("/proc/%d/mem" % pid, "rb"):
            entry["mem"] = "opened"
    except OSError as e:
        entry["mem"] = e.strerror
    seen.append(entry)
    with open("/proc/%d/status" % pid) as f:
        pid = int([l for l in f if l.startswith("PPid:")][0].split()[1])
print(json.dumps({"type": "result", "text": json.dumps(seen)}), flush=True)
`

// unprivileged runs cmd as nobody when the tests run as root (CI): root may read any
// process, so the node and its agents must run as a user that the kernel holds to the
// rules. The binary is copied where nobody may run it, and dirs are given to nobody.
func unprivileged(t *testing.T, cmd *exec.Cmd, dirs ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return cmd
	}
	bin, err := os.MkdirTemp("", "agentmux-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(bin) })
	exe := filepath.Join(bin, "runtime")
	copyFile(t, os.Args[0], exe)
	for _, d := range append(dirs, bin) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", exe}, cmd.Args[1:]...)...)
	out.Env = cmd.Env
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAgentCannotReadTheNode: an agent of the node's own user reads /proc/<pid>/environ
// and opens /proc/<pid>/mem of every process above it; the node's are refused, and no
// secret of the node's environment reaches it.
func TestAgentCannotReadTheNode(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentmux-nodump-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port := proctest.FreePort(t)
	manifest := filepath.Join(dir, "agentmux.toml")
	// The probe works in dir, which its user may enter: the test's own folder may lie
	// under one only root may (a clone in a folder of mktemp's).
	m := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[metrics]\naddr = \"127.0.0.1:0\"\n[hosts.probe]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nworking_dir = %q\n",
		port, filepath.Join(dir, "store"), procProbe, dir)
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := unprivileged(t, exec.Command(os.Args[0], "up", "-c", manifest, "--name", "guarded"), dir)
	cmd.Env = []string{"T_NODE_SECRET=" + nuid.Next(), "AGENTMUX_STATE_DIR=" + dir, "HOME=" + dir}
	up := startProc(t, cmd)
	until(t, "node up", up.stderr, "node up")
	if strings.Contains(up.stderr.String(), "can read this one's environment") {
		t.Fatalf("the node could not guard itself:\n%s", up.stderr)
	}

	submit := exec.Command(os.Args[0], "submit", "-c", manifest, "--id", "t-proc", "probe", "go", "--follow")
	submit.Env = []string{"AGENTMUX_STATE_DIR=" + dir}
	follow := startProc(t, submit)
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("the probe's session: exit %d\n%s\n%s", code, follow.stdout, follow.stderr)
	}
	var text string
	for _, line := range strings.Split(follow.stdout.String(), "\n") {
		var result struct{ Type, Text string }
		if json.Unmarshal([]byte(line), &result) == nil && result.Type == "result" {
			text = result.Text
		}
	}
	var seen []struct {
		PID          int
		Environ, Mem string
		Secret       bool
	}
	if err := json.Unmarshal([]byte(text), &seen); err != nil {
		t.Fatalf("the probe's result %q: %v\n%s", text, err, follow.stdout)
	}
	node := up.cmd.Process.Pid
	found := false
	for _, p := range seen {
		if p.Secret {
			t.Errorf("the agent read the node's secret from /proc/%d/environ", p.PID)
		}
		if p.PID == node {
			found = true
			if p.Environ != "Permission denied" || p.Mem != "Permission denied" {
				t.Errorf("the node's /proc/%d: environ %q, mem %q; want both refused", node, p.Environ, p.Mem)
			}
		}
	}
	if !found {
		t.Fatalf("the probe did not find its node (pid %d) above it: %+v", node, seen)
	}
}
