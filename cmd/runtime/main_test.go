package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidate(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI("validate", "-c", "../../examples/worker.toml")
	if code != exitOK || !strings.Contains(out, "ok (1 hosts, 2 supervisors, 2 routes)") {
		t.Fatalf("good manifest: exit %d, %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[hosts.w]\ncommand = \"x\"\ntimeout = \"10x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("validate", "-c", bad)
	if code != exitUsage || !strings.Contains(errOut, `hosts.w.timeout (bad.toml:3:1): "10x" is not a duration; use seconds or "90s"`) {
		t.Fatalf("bad manifest: exit %d, %q", code, errOut)
	}
}

// TestValidateSaysWhatUpWouldRefuse: the secrets a manifest names but this machine does
// not hold are reported as `up` would refuse them.
func TestValidateSaysWhatUpWouldRefuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.toml")
	m := `[nats]
server_name = "n1"
[nats.cluster]
name = "c"
listen = "127.0.0.1:0"
user = "route"
password_env = "T_UNSET_ROUTE"
[[nats.users]]
name = "ops"
password_env = "T_UNSET_OPS"
role = "operator"
[metrics]
token_env = "T_UNSET_METRICS"
[notify.hook]
webhook = "https://hooks.example/x"
events = ["session.ended"]
secret_env = "T_UNSET_HOOK"
[hosts.w]
command = "x"
`
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("validate", "-c", path)
	if code != exitOK || !strings.Contains(out, "ok (1 hosts") {
		t.Fatalf("validate: exit %d, %s %s", code, out, errOut)
	}
	for _, want := range []string{`user "ops": T_UNSET_OPS is not set`, "[nats.cluster] T_UNSET_ROUTE is not set",
		"[metrics] token_env: T_UNSET_METRICS is not set", "notify hook: $T_UNSET_HOOK, its signing secret, is not set"} {
		if !strings.Contains(errOut, "warning: agentmux up would refuse to start: "+want) {
			t.Errorf("validate does not warn %q:\n%s", want, errOut)
		}
	}
	// Run as root (as in CI), up refuses a host whose agents name no user.
	if root, warned := os.Geteuid() == 0, strings.Contains(errOut, "would refuse to start: hosts.w: this node runs as root and the host names no user"); root != warned {
		t.Errorf("validate run as root %v, warns of hosts.w's user %v:\n%s", root, warned, errOut)
	}
	t.Setenv("T_UNSET_OPS", "set")
	if _, _, errOut := runCLI("validate", "-c", path); strings.Contains(errOut, "T_UNSET_OPS") {
		t.Errorf("a set variable is still reported:\n%s", errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"nonsense"},
		{"run", "-c", "../../examples/worker.toml", "worker"},
		{"run", "-c", "../../examples/worker.toml", "nohost", "prompt"},
		{"submit", "-c", "../../examples/worker.toml"},
		{"validate", "-c", "/does/not/exist.toml"},
	} {
		if code, _, errOut := runCLI(args...); code != exitUsage || errOut == "" {
			t.Errorf("runtime %v: exit %d, stderr %q; want exit 2 with a message", args, code, errOut)
		}
	}
}

// TestTaskIDsAreSubjectTokens: an id that would split or widen the session's subjects
// is refused at submit, saying why, before anything is queued (the node would run the
// task under another id, and --follow would wait for events that never come).
func TestTaskIDsAreSubjectTokens(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"a.b":                    `task id "a.b" is one token of NATS subjects`,
		"t*":                     `task id "t*" is one token`,
		"has space":              `use letters, digits, '_' and '-'`,
		strings.Repeat("x", 129): "is 129 characters long; at most 128",
	} {
		for _, target := range [][]string{{"coder", "go"}, {"build_and_test", "spec=x"}} {
			code, _, errOut := runCLI(append([]string{"submit", "-c", "../../examples/pipeline.toml", "--id", id}, target...)...)
			if code != exitUsage || !strings.Contains(errOut, "--id: ") || !strings.Contains(errOut, want) {
				t.Errorf("submit --id %.30q %s: exit %d, %q", id, target[0], code, errOut)
			}
		}
	}
}

func TestUnsafeStartRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "open.toml")
	if err := os.WriteFile(path, []byte("[nats]\nlisten = \"0.0.0.0:4222\"\n[hosts.w]\ncommand = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "up"} {
		code, _, errOut := runCLI(cmd, "-c", path)
		if code != exitUsage || !strings.Contains(errOut, `nats.listen (open.toml:2:1): "0.0.0.0:4222" lets in anyone who can reach it, and no [[nats.users]] are defined`) {
			t.Errorf("agentmux %s on an open listener: exit %d, %q", cmd, code, errOut)
		}
	}
}
