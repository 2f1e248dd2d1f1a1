package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
)

// busProbe is an agent that tries the bus of its node as anything on the machine
// could: it connects to the node's port with no credential and tries to answer a
// person's request (the way a local process answered its own approval before), then
// asks its own approval and ends with what the bus said and what the person answered.
const busProbe = `import json, os, socket, sys
sys.stdin.readline()
s = socket.create_connection(("127.0.0.1", int(os.environ["BUS_PORT"])), timeout=10)
f = s.makefile("rb")
f.readline()  # INFO
s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'
          b'PUB agentmux.respond.alice.h-any 15\r\n{"value":"yes"}\r\nPING\r\n')
said = f.readline().decode().strip()
print(json.dumps({"type": "approval", "id": "a1", "description": "deploy: rm -rf /prod"}), flush=True)
answer = json.loads(sys.stdin.readline())
print(json.dumps({"type": "result", "text": json.dumps({"bus": said, "answer": answer.get("value")})}), flush=True)
`

// TestDefaultBusRefusesAnonymous: a node with no [[nats.users]] (every example
// manifest) lets no anonymous client in, loopback included, so its agent cannot reach
// the bus; the CLI on the machine needs no setup (it finds the local operator's
// credential the node wrote, mode 0600), answers in the name --as gives, and finds the
// same credential on the node started again.
func TestDefaultBusRefusesAnonymous(t *testing.T) {
	t.Parallel()
	port := proctest.FreePort(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
[metrics]
addr = "127.0.0.1:0"
[hosts.probe]
# The bus's own refusal, with the sandbox's out of the way (it refuses the port).
sandbox = "none"
command = "python3"
args = ["-c", %q]
env = { BUS_PORT = "%d" }
question_timeout = "2m"
[supervisors.oncall]
strategy = "human"
[[routes]]
supervisor = "oncall"
`, port, busProbe, port)
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "local1")
	until(t, "node up", up.stderr, "node up")
	cred := bus.LocalCredentials(os.Getenv("AGENTMUX_STATE_DIR"), port)
	if st, err := os.Stat(cred); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the local operator's credential %s: %v %v", cred, st, err)
	}
	// The line after "node up", written apart from it.
	until(t, "the node saying where the CLI's credential is", up.stderr, cred)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if nc, err := nats.Connect(url); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("an anonymous client on loopback: %v", err)
	}

	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-probe", "probe", "go", "--follow")
	var id string
	proctest.EventuallyWithin(t, 30*time.Second, "the probe's approval in agentmux pending", func() bool {
		code, out, _ := runCLI("pending", "-c", manifest, "--json")
		for _, line := range strings.Split(out, "\n") {
			var rec struct{ ID, Session string }
			if code == exitOK && json.Unmarshal([]byte(line), &rec) == nil && rec.Session == "t-probe" {
				id = rec.ID
			}
		}
		return id != ""
	})
	if code, out, stderr := runCLI("respond", "-c", manifest, id, "no", "--as", "alice"); code != exitOK || !strings.Contains(out, "as alice") {
		t.Fatalf("respond: exit %d\n%s\n%s", code, out, stderr)
	}
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("the probe's session: exit %d\n%s\n%s", code, follow.stdout, follow.stderr)
	}
	var got struct{ Bus, Answer string }
	for _, line := range strings.Split(follow.stdout.String(), "\n") {
		var result struct{ Type, Text string }
		if json.Unmarshal([]byte(line), &result) == nil && result.Type == "result" {
			_ = json.Unmarshal([]byte(result.Text), &got)
		}
	}
	if !strings.Contains(got.Bus, "Authorization Violation") || got.Answer != "no" {
		t.Fatalf("the agent got %+v from the bus and the person; want an authorization violation and alice's no\n%s", got, follow.stdout)
	}
	code, out, stderr := runCLI("audit", "-c", manifest, "t-probe", "--json")
	if code != exitOK || !strings.Contains(out, `"decider":"human:alice"`) {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, stderr)
	}
	// Another user's CLI (here: another state directory) is refused, saying where it
	// looked for the credential.
	other := exec.Command(os.Args[0], "pending", "-c", manifest)
	other.Env = []string{"AGENTMUX_STATE_DIR=" + t.TempDir()}
	p := startProc(t, other)
	if code := p.wait(t, 30*time.Second); code != exitError || !strings.Contains(p.stderr.String(), "anonymous clients are refused") ||
		!strings.Contains(p.stderr.String(), "agentmux up` wrote") {
		t.Fatalf("pending without the credential: exit %d, %s", code, p.stderr)
	}
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := up.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("agentmux up on SIGTERM: exit %d\n%s", code, up.stderr)
	}
	seed, err := os.ReadFile(cred)
	if err != nil {
		t.Fatal(err)
	}
	again := runtimeProc(t, "up", "-c", manifest, "--name", "local1")
	until(t, "node up again", again.stderr, "node up")
	if now, err := os.ReadFile(cred); err != nil || string(now) != string(seed) {
		t.Fatalf("the node started again made a new credential (%v)", err)
	}
	if code, out, stderr := runCLI("nodes", "-c", manifest); code != exitOK || !strings.Contains(out, "local1") {
		t.Fatalf("nodes after the restart: exit %d\n%s\n%s", code, out, stderr)
	}
}
