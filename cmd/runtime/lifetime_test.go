package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestKilledNodeLeavesNoProcess: `runtime up` is killed with SIGKILL while an agent
// (with a grandchild holding its stdout) and a command supervisor (with a background
// child) run; within 2 s no process any of them started is left.
func TestKilledNodeLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	mark := nuid.Next()
	started := filepath.Join(dir, "started")
	policy := fmt.Sprintf(`import os, subprocess, sys, time
subprocess.Popen(["sleep", "1001"])
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
[[routes]]
supervisor = "policy"
`, freePort(t), filepath.Join(dir, "store"), os.Args[0], mark, policy, mark)
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "runtime up", up.stderr, "node up")
	runtimeProc(t, "submit", "-c", manifest, "w", `{"steps":[{"grandchild":true},{"send":{"type":"approval","id":"a1","description":"go?"}},{"await":"a1"},{"result":"done"}]}`)
	poll(t, 20*time.Second, "the agent, its grandchild, the supervisor and its child running", func() bool {
		_, err := os.Stat(started)
		return err == nil && len(proctest.Marked(mark)) >= 4
	})
	kill(t, up)
	killed := time.Now()
	poll(t, 2*time.Second, "every process the node started gone", func() bool { return len(proctest.Marked(mark)) == 0 })
	t.Logf("all gone %v after the node", time.Since(killed).Round(time.Millisecond))
}
