package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// TestKilledNodeLeavesNoProcess: `agentmux up` is killed with SIGKILL while an agent
// (with a grandchild holding its stdout) and a command supervisor (with a background
// child, and one that left its process group with setsid) run; within 2 s no process
// any of them started is left: the detached one goes with the supervisor's cgroup.
func TestKilledNodeLeavesNoProcess(t *testing.T) {
	t.Parallel()
	testdeps.Cgroups(t, shim.CheckCgroups()) // what leaves its group dies with its cgroup
	dir := t.TempDir()
	mark := nuid.Next()
	out := filepath.Join(dir, "out") // what the supervisor writes: not the store's folder
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(out, "started")
	policy := fmt.Sprintf(`import os, subprocess, sys, time
subprocess.Popen(["sleep", "1001"])
subprocess.Popen(["sleep", "1002"], start_new_session=True)
open(%q, "w").write("x")
sys.stdin.readline()
time.sleep(1000)
`, started)
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1", AGENTMUX_TEST_MARK = %q }
question_timeout = "5m"
[supervisors.policy]
strategy = "command"
command = "python3"
args = ["-c", %q]
env = { AGENTMUX_TEST_MARK = %q }
sandbox_write = [%q]
[[routes]]
supervisor = "policy"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0], mark, policy, mark, out)
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	runtimeProc(t, "submit", "-c", manifest, "w", `{"steps":[{"grandchild":true},{"send":{"type":"approval","id":"a1","description":"go?"}},{"await":"a1"},{"result":"done"}]}`)
	proctest.EventuallyWithin(t, 20*time.Second, "the agent, its grandchild, the supervisor and its children running", func() bool {
		_, err := os.Stat(started)
		return err == nil && len(proctest.Marked(mark)) >= 5
	})
	kill(t, up)
	killed := time.Now()
	proctest.EventuallyWithin(t, 2*time.Second, "every process the node started gone", func() bool { return len(proctest.Marked(mark)) == 0 })
	t.Logf("all gone %v after the node", time.Since(killed).Round(time.Millisecond))
}

// TestRestartSweepsLeftovers: a node's shim is killed with it (stopped first, so it
// cannot act on its parent's death), leaving the agent and its children running, one of
// them detached (setsid); the next node on the same store kills them as it starts, the
// detached one with the agent's cgroup. The agent ignores SIGHUP, which the
// kernel sends a group orphaned with a stopped member (the shim).
func TestRestartSweepsLeftovers(t *testing.T) {
	t.Parallel()
	testdeps.Cgroups(t, shim.CheckCgroups()) // what leaves its group dies with its cgroup
	dir := t.TempDir()
	mark := nuid.Next()
	store := filepath.Join(dir, "store")
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = "sh"
args = ["-c", "trap '' HUP; sleep 3600 & setsid sleep 3602 & exec sleep 3601"]
env = { AGENTMUX_TEST_MARK = %q }
`, proctest.FreePort(t), store, mark)
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	runtimeProc(t, "submit", "-c", manifest, "w", "run")
	records := filepath.Join(store, "agentmux-processes")
	var groups []os.DirEntry
	proctest.EventuallyWithin(t, 20*time.Second, "the shim, the agent and its child running, the group recorded", func() bool {
		groups, _ = os.ReadDir(records)
		return len(groups) == 1 && len(proctest.Marked(mark)) >= 4
	})
	shimPID, err := strconv.Atoi(groups[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-shimPID, syscall.SIGKILL) })
	if err := syscall.Kill(shimPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	kill(t, up)
	if err := syscall.Kill(shimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	proctest.EventuallyWithin(t, 5*time.Second, "the shim gone", func() bool { return !slices.Contains(proctest.Marked(mark), shimPID) })
	if left := proctest.Marked(mark); len(left) < 3 {
		t.Fatalf("only %v left after the node and its shim died; the test needs the agent and its children orphaned", left)
	}
	again := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up again", again.stderr, "node up")
	if !strings.Contains(again.stderr.String(), "killed process groups an earlier node on this store left running") {
		t.Fatalf("the restarted node did not say it swept:\n%s", again.stderr)
	}
	proctest.EventuallyWithin(t, 5*time.Second, "the leftovers gone", func() bool { return len(proctest.Marked(mark)) == 0 })
}

// TestTermWhileWaitingForTheCluster: a clustered node whose peers are not up waits for
// them to take its streams (up to a minute); SIGTERM meanwhile stops it at once, exit 0,
// as it stops a node that is up.
func TestTermWhileWaitingForTheCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentmux.toml")
	text := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
server_name = "alone"
[nats.cluster]
name = "waiting"
listen = "127.0.0.1:%d"
routes = ["nats://127.0.0.1:%d", "nats://127.0.0.1:%d"]
[metrics]
addr = "127.0.0.1:0"
[hosts.unused]
command = "true"
`, proctest.FreePort(t), filepath.Join(dir, "store"), proctest.FreePort(t), proctest.FreePort(t), proctest.FreePort(t))
	if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--no-hosts", "--no-supervisors", "--log", "info")
	untilWithin(t, "waiting for the cluster", up.stderr, "waiting for JetStream to take the streams", 30*time.Second)
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := up.wait(t, 20*time.Second); code != exitOK || !strings.Contains(up.stderr.String(), "stopped while starting") {
		t.Fatalf("agentmux up, SIGTERM while waiting for its cluster: exit %d; want 0, at once\nstderr:\n%s", code, up.stderr)
	}
}
