//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// escapeProbe is an agent trying every way out of its sandbox to the node that runs
// it: the bus and metrics ports, the local operator's credential, the store, the
// node's environment, a signal to it, a write outside its directories, to the
// manifest and to a rule supervisor's rules file (a rule planted there would allow it
// what no person did). It also does what an agent must: write its working directory and its
// TMPDIR, and connect to another port. Its result maps each attempt to "ok" or the
// error it met.
const escapeProbe = `import json, os, socket, sys
sys.stdin.readline()
with open("/proc/%d/status" % os.getppid()) as f:  # the shim's parent is the node
    node = int([l for l in f if l.startswith("PPid:")][0].split()[1])
def connect(port):
    socket.create_connection(("127.0.0.1", int(port)), timeout=5).close()
def read(path):
    with open(path, "rb") as f:
        f.read(1)
def store():
    files = [os.path.join(d, n) for d, _, ns in os.walk(os.environ["STORE"]) for n in ns]
    if not files:
        raise OSError(0, "no file found in the store")
    for path in files:
        read(path)
def write(path):
    with open(path, "a") as f:
        f.write("x")
attempts = {
    "bus": lambda: connect(os.environ["BUS"]),
    "metrics": lambda: connect(os.environ["METRICS"]),
    "console": lambda: connect(os.environ["CONSOLE"]),
    "later node": lambda: connect(os.environ["LATER"]),
    "credential": lambda: read(os.environ["CRED"]),
    "store": store,
    "environ": lambda: read("/proc/%d/environ" % node),
    "signal": lambda: os.kill(node, 0),
    "outside": lambda: write(os.path.join(os.environ["OUTSIDE"], "planted")),
    "manifest": lambda: write(os.environ["MANIFEST"]),
    "rules file": lambda: write(os.environ["RULES"]),
    "work": lambda: write("made-here"),
    "tmp": lambda: write(os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch-%d" % os.getpid())),
    "other port": lambda: connect(os.environ["OPEN"]),
}
seen = {}
for name, attempt in attempts.items():
    try:
        attempt()
        seen[name] = "ok"
    except OSError as e:
        seen[name] = e.strerror or str(e)
print(json.dumps({"type": "result", "text": json.dumps(seen)}), flush=True)
`

// lingerer is an agent that starts before a console does and, once told (the file GO
// exists), sends the console a request: its result says whether an answer came ("ok"),
// the connection was closed unanswered ("closed"), or the error it met.
const lingerer = `import json, os, socket, sys, time
sys.stdin.readline()
open("lingering", "w").close()
while not os.path.exists(os.environ["GO"]):
    time.sleep(0.05)
seen = {}
try:
    s = socket.create_connection(("127.0.0.1", int(os.environ["CONSOLE"])), timeout=5)
    s.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    seen["console"] = "ok" if s.recv(100) else "closed"
    s.close()
except OSError as e:
    seen["console"] = e.strerror or str(e)
print(json.dumps({"type": "result", "text": json.dumps(seen)}), flush=True)
`

// TestSandboxedAgentCannotReachItsNode runs a node as an unprivileged user (root may
// read any process) with a real agent that tries each way out of its sandbox, and
// checks each is refused and that what an agent needs still works. A host whose
// working_dir holds the rules file is warned about, since Landlock cannot take the file
// back from a tree it grants. Then a console and a second node start, as another user,
// on ports the first node never knew of: the agent started after them cannot reach
// them either.
func TestSandboxedAgentCannotReachItsNode(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentmux-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { open.Close() })
	go func() {
		for {
			c, err := open.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	state, store, work, outside, rules := filepath.Join(dir, "state"), filepath.Join(dir, "store"), filepath.Join(dir, "work"), filepath.Join(dir, "outside"), filepath.Join(dir, "rules")
	for _, d := range []string{state, work, outside, rules} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port, metrics, console, later := proctest.FreePort(t), proctest.FreePort(t), proctest.FreePort(t), proctest.FreePort(t)
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:%d"
[hosts.probe]
command = "python3"
args = ["-c", %q]
working_dir = %q
env = { BUS = "%d", METRICS = "%d", OPEN = "%d", CONSOLE = "%d", LATER = "%d", CRED = %q, STORE = %q, OUTSIDE = %q, MANIFEST = %q, RULES = %q }
[hosts.lingerer]
command = "python3"
args = ["-c", %q]
working_dir = %q
env = { CONSOLE = "%d", GO = %q }
[hosts.careless]
command = "python3"
working_dir = %q
[supervisors.policy]
strategy = "rule"
rules_file = "rules/policy.toml"
[[routes]]
supervisor = "policy"
`, port, store, metrics, escapeProbe, work, port, metrics, open.Addr().(*net.TCPAddr).Port, console, later,
		bus.LocalCredentials(state, port), store, outside, manifest, filepath.Join(rules, "policy.toml"), lingerer, work, console, filepath.Join(dir, "go"), rules)
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := unprivileged(t, exec.Command(os.Args[0], "up", "-c", manifest, "--name", "boxed"), dir, state, work, outside, rules)
	if os.Geteuid() == 0 {
		if err := os.Chown(manifest, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Env = []string{"AGENTMUX_STATE_DIR=" + state, "HOME=" + dir}
	up := startProc(t, cmd)
	until(t, "node up", up.stderr, "node up")
	if warned := regexp.MustCompile(`may write the manifest or a rules file.*program=hosts\.careless file=` + regexp.QuoteMeta(filepath.Join(rules, "policy.toml"))); !warned.MatchString(up.stderr.String()) {
		t.Errorf("the node did not warn that host careless may write policy's rules file:\n%s", up.stderr)
	}

	seen := probe(t, manifest, state, "t-escape", up)
	want := map[string]string{
		"bus": "Permission denied", "metrics": "Permission denied", "credential": "Permission denied",
		"store": "Permission denied", "environ": "Permission denied", "signal": "Operation not permitted",
		"outside": "Permission denied", "manifest": "Permission denied", "rules file": "Permission denied",
		"console": "Connection refused", "later node": "Connection refused",
		"work": "ok", "tmp": "ok", "other port": "ok",
	}
	for name, w := range want {
		if seen[name] != w {
			t.Errorf("%s: the agent met %q, want %q", name, seen[name], w)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("the agent planted a file outside its directories")
	}
	if b, _ := os.ReadFile(manifest); string(b) != m {
		t.Error("the agent changed the manifest")
	}
	if _, err := os.Stat(filepath.Join(rules, "policy.toml")); err == nil {
		t.Error("the agent wrote policy's rules file")
	}

	// An agent starts before them and lingers: its sandbox cannot be told of the
	// console's port, and the console turns it away at accept.
	linger := exec.Command(os.Args[0], "submit", "-c", manifest, "--id", "t-linger", "lingerer", "go", "--follow")
	linger.Env = []string{"AGENTMUX_STATE_DIR=" + state}
	lingering := startProc(t, linger)
	proctest.EventuallyWithin(t, 30*time.Second, "the lingering agent started", func() bool {
		_, err := os.Stat(filepath.Join(work, "lingering"))
		return err == nil
	})

	// A console, and a node with a manifest of its own, start later as this test's
	// user, on ports that are in no manifest of the first node.
	conCmd := exec.Command(os.Args[0], "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", console), "--as", "ana")
	conCmd.Env = []string{"AGENTMUX_STATE_DIR=" + state}
	con := startProc(t, conCmd)
	otherState := t.TempDir()
	other := filepath.Join(otherState, "agentmux.toml")
	if err := os.WriteFile(other, []byte(fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[metrics]\naddr = \"127.0.0.1:0\"\n[hosts.idle]\ncommand = \"cat\"\n", later, filepath.Join(otherState, "store"))), 0o644); err != nil {
		t.Fatal(err)
	}
	second := exec.Command(os.Args[0], "up", "-c", other, "--name", "later")
	second.Env = []string{"AGENTMUX_STATE_DIR=" + otherState, "HOME=" + otherState}
	up2 := startProc(t, second)
	until(t, "console up", con.stderr, "console up")
	until(t, "the later node up", up2.stderr, "node up")
	seen = probe(t, manifest, state, "t-escape-later", up)
	for name, w := range map[string]string{"console": "Permission denied", "later node": "Permission denied", "other port": "ok"} {
		if seen[name] != w {
			t.Errorf("once they started, %s: the agent met %q, want %q", name, seen[name], w)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := lingering.wait(t, 60*time.Second); code != exitOK {
		t.Fatalf("the lingering agent's session: exit %d\n%s\n%s", code, lingering.stdout, lingering.stderr)
	}
	if out := lingering.stdout.String(); !strings.Contains(out, `{\"console\": \"closed\"}`) && !strings.Contains(out, `{\"console\": \"Connection reset by peer\"}`) {
		t.Errorf("the agent that started before the console reached it; want it turned away unanswered:\n%s", lingering.stdout)
	}
}

// probe runs escapeProbe's session id on the node up and returns what it met.
func probe(t *testing.T, manifest, state, id string, up *proc) map[string]string {
	t.Helper()
	return probeHost(t, manifest, state, id, "probe", up)
}

// probeHost runs a session id of host, whose agent prints its findings as a result, on
// the node up, and returns them.
func probeHost(t *testing.T, manifest, state, id, host string, up *proc) map[string]string {
	t.Helper()
	submit := exec.Command(os.Args[0], "submit", "-c", manifest, "--id", id, host, "go", "--follow")
	submit.Env = []string{"AGENTMUX_STATE_DIR=" + state}
	follow := startProc(t, submit)
	if code := follow.wait(t, 60*time.Second); code != exitOK {
		t.Fatalf("the probe's session: exit %d\n%s\n%s\nnode:\n%s", code, follow.stdout, follow.stderr, up.stderr)
	}
	var seen map[string]string
	for _, line := range strings.Split(follow.stdout.String(), "\n") {
		var result struct{ Type, Text string }
		if json.Unmarshal([]byte(line), &result) == nil && result.Type == "result" {
			if err := json.Unmarshal([]byte(result.Text), &seen); err != nil {
				t.Fatalf("the probe's result %q: %v", result.Text, err)
			}
		}
	}
	return seen
}

// rootProbe is an agent of a node run as root that tries what root could: read the
// node's environment and another user's 0600 file. Its result maps each attempt to "ok"
// or the error it met, beside its uid and effective capabilities.
const rootProbe = `import json, os, sys
sys.stdin.readline()
with open("/proc/%d/status" % os.getppid()) as f:  # the shim's parent is the node
    node = int([l for l in f if l.startswith("PPid:")][0].split()[1])
def read(path):
    with open(path, "rb") as f:
        f.read(1)
seen = {"uid": str(os.getuid())}
with open("/proc/self/status") as f:
    seen["CapEff"] = [l.split()[1] for l in f if l.startswith("CapEff:")][0]
for name, path in {"environ": "/proc/%d/environ" % node, "secret": os.environ["SECRET"]}.items():
    try:
        read(path)
        seen[name] = "ok"
    except OSError as e:
        seen[name] = e.strerror or str(e)
print(json.dumps({"type": "result", "text": json.dumps(seen)}), flush=True)
`

// TestRootNodeRefusesAnAgentWithNoUser: `agentmux up` run as root does not start a host
// whose agents would be root without the manifest saying so; it exits, naming the host
// and the two ways on.
func TestRootNodeRefusesAnAgentWithNoUser(t *testing.T) {
	t.Parallel()
	testdeps.Root(t, "to run a node as root")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[hosts.said]\ncommand = \"true\"\nuser = \"root\"\n[hosts.bare]\ncommand = \"true\"\n",
		proctest.FreePort(t), filepath.Join(dir, "store"))
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "up", "-c", manifest, "--name", "rooted")
	cmd.Env = []string{"AGENTMUX_RUNTIME_MAIN=1", "PATH=" + os.Getenv("PATH"), "AGENTMUX_STATE_DIR=" + filepath.Join(dir, "state"), "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("up ran a host with no user as root (err %v):\n%s", err, out)
	}
	for _, want := range []string{`hosts.bare: this node runs as root and the host names no user`, `user = "root"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("up's refusal does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "hosts.said:") {
		t.Errorf("up refused the host whose manifest says user = \"root\":\n%s", out)
	}
}

// TestRootNodesAgentsAreNotRoot runs a node as root, as CI does, with two agents that
// try what root could: one with no user runs as root without a capability, one with
// user = "nobody" runs as nobody; neither reads the node's environment or another
// user's 0600 file.
func TestRootNodesAgentsAreNotRoot(t *testing.T) {
	t.Parallel()
	testdeps.Root(t, "to run a node as root")
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("needs /usr/bin/python3, which nobody can run")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // root's, 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state, work := filepath.Join(dir, "state"), filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "theirs")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 1, 1); err != nil {
		t.Fatal(err)
	}
	port := proctest.FreePort(t)
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.rootless]
command = "python3"
args = ["-c", %[3]q]
working_dir = %[4]q
env = { SECRET = %[5]q }
user = "root"
[hosts.nobody]
command = "/usr/bin/python3"
args = ["-c", %[3]q]
working_dir = %[4]q
env = { SECRET = %[5]q }
user = "nobody"
`, port, filepath.Join(dir, "store"), rootProbe, work, secret)
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "up", "-c", manifest, "--name", "rooted")
	cmd.Env = []string{"AGENTMUX_STATE_DIR=" + state, "HOME=" + dir, "AGENTMUX_SECRET_OF_THE_NODE=hunter2"}
	up := startProc(t, cmd)
	until(t, "node up", up.stderr, "node up")
	if !strings.Contains(up.stderr.String(), "as its manifest says (on Linux without any capability)") {
		t.Errorf("the node did not warn that hosts.rootless runs as root:\n%s", up.stderr)
	}
	for host, uid := range map[string]string{"rootless": "0", "nobody": "65534"} {
		seen := probeHost(t, manifest, state, "t-"+host, host, up)
		want := map[string]string{"uid": uid, "CapEff": "0000000000000000", "environ": "Permission denied", "secret": "Permission denied"}
		for name, w := range want {
			if seen[name] != w {
				t.Errorf("%s: %s is %q, want %q", host, name, seen[name], w)
			}
		}
	}
}
