package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestContextReachesAFleetWithoutItsManifest: a person who has only the fleet's URL
// and their own user adds a context and, from a directory with no manifest, submits a
// task, sees its approval waiting, answers it, and finds the answer in the audit in
// their own name; $AGENTMUX_SERVER reaches it as well, and a context that is gone
// says what to do.
func TestContextReachesAFleetWithoutItsManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "fleet", "agentmux.toml")
	port := proctest.FreePort(t)
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
user = "node1"
password_env = "AGENTMUX_TEST_FLEET_PASSWORD"
[[nats.users]]
name = "node1"
password_env = "AGENTMUX_TEST_FLEET_PASSWORD"
role = "node"
[[nats.users]]
name = "ana"
password_env = "AGENTMUX_TEST_ROUTE_PASSWORD"
role = "operator"
[metrics]
addr = "127.0.0.1:0"
[supervisors.people]
strategy = "human"
[[routes]]
supervisor = "people"
`, port, filepath.Join(dir, "store")) + simHost(`question_timeout = "5m"`)
	if err := os.MkdirAll(filepath.Dir(manifest), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node:\n%s", up.stderr)
		}
	})

	// The person's directory holds no manifest; their contexts are their own.
	home := t.TempDir()
	cli := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		return homeCLI(t, home, env, args...)
	}
	server := fmt.Sprintf("nats://127.0.0.1:%d", port)

	if code, _, stderr := cli(nil, "pending"); code != exitUsage || !strings.Contains(stderr, "no fleet to reach") || !strings.Contains(stderr, "agentmux context add") {
		t.Fatalf("pending with no fleet named: exit %d, %s", code, stderr)
	}
	if code, out, stderr := cli(nil, "context", "add", "prod", "--server", server, "--user", "ana", "--password-env", "AGENTMUX_TEST_ROUTE_PASSWORD"); code != exitOK || !strings.Contains(out, "current context") {
		t.Fatalf("context add: exit %d, %s%s", code, out, stderr)
	}
	info, err := os.Stat(filepath.Join(home, "config", "contexts.toml"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the contexts file: %v, mode %v; want 0600", err, info.Mode())
	}
	if data, _ := os.ReadFile(filepath.Join(home, "config", "contexts.toml")); strings.Contains(string(data), os.Getenv("AGENTMUX_TEST_ROUTE_PASSWORD")) {
		t.Fatalf("the contexts file holds the password:\n%s", data)
	}

	script := `{"steps":[{"send":{"type":"approval","id":"a1","description":"deploy to staging"}},{"await":"a1"},{"result":"done"}]}`
	code, out, stderr := cli(nil, "submit", "--id", "t-ctx", "w", script)
	if code != exitOK || strings.TrimSpace(out) != "t-ctx" {
		t.Fatalf("submit through the context: exit %d, %s%s", code, out, stderr)
	}
	var id string
	proctest.EventuallyWithin(t, 30*time.Second, "the approval in agentmux pending", func() bool {
		code, out, stderr := cli(nil, "pending", "--json")
		if code != exitOK {
			t.Fatalf("pending through the context: exit %d, %s", code, stderr)
		}
		for line := range strings.Lines(out) {
			var r struct{ ID, Session string }
			if json.Unmarshal([]byte(line), &r) == nil && r.Session == "t-ctx" {
				id = r.ID
			}
		}
		return id != ""
	})
	if code, out, stderr := cli(nil, "respond", id, "yes"); code != exitOK {
		t.Fatalf("respond through the context: exit %d, %s%s", code, out, stderr)
	}
	var audit string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("audit:\n%s", audit)
		}
	})
	proctest.EventuallyWithin(t, 30*time.Second, "the session ended, the answer audited as ana", func() bool {
		code, out, stderr := cli([]string{"AGENTMUX_SERVER=" + server}, "audit", "t-ctx", "--user", "ana", "--password-env", "AGENTMUX_TEST_ROUTE_PASSWORD", "-o", "json")
		audit = out + stderr
		return code == exitOK && strings.Contains(out, `"decider":"human:ana"`) && strings.Contains(out, `"kind":"session.ended"`)
	})

	// Named by $AGENTMUX_CONTEXT; and a context removed says what there is.
	if code, out, stderr := cli([]string{"AGENTMUX_CONTEXT=prod"}, "nodes", "-o", "json"); code != exitOK || !strings.Contains(out, `"hosts"`) {
		t.Fatalf("nodes with AGENTMUX_CONTEXT: exit %d, %s%s", code, out, stderr)
	}
	if code, _, stderr := cli(nil, "context", "rm", "prod"); code != exitOK {
		t.Fatalf("context rm: exit %d, %s", code, stderr)
	}
	if code, _, stderr := cli(nil, "sessions", "--context", "prod"); code != exitUsage || !strings.Contains(stderr, `no context "prod"`) || !strings.Contains(stderr, "it has none") {
		t.Fatalf("sessions --context of a removed context: exit %d, %s", code, stderr)
	}
	// A wrong password is refused by the bus, and said so.
	if code, _, stderr := cli([]string{"WRONG=x", "AGENTMUX_SERVER=" + server}, "pending", "--user", "ana", "--password-env", "WRONG"); code != exitError || !strings.Contains(stderr, "uthorization") {
		t.Fatalf("pending with a wrong password: exit %d, %s", code, stderr)
	}
}

// homeCLI runs `agentmux args…` in home, a person's directory with no manifest, whose
// contexts are in home/config, with env besides.
func homeCLI(t *testing.T, home string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = home
	cmd.Env = append([]string{"AGENTMUX_CONFIG_DIR=" + filepath.Join(home, "config"), "AGENTMUX_CONTEXT=", "AGENTMUX_SERVER="}, env...)
	p := startProc(t, cmd)
	code := p.wait(t, 30*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

// TestContextsFile: the file is the user's own, and what it holds is checked.
func TestContextsFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return homeCLI(t, home, nil, args...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"context", "add", "x", "--server", "nats://u:p@h:4222"}, "never in the URL"},
		{[]string{"context", "add", "x", "--server", "http://h"}, `scheme "http"`},
		{[]string{"context", "add", "x", "--server", "nats://h:4222", "--user", "u"}, "needs --password-env"},
		{[]string{"context", "add", "x y", "--server", "nats://h:4222"}, "context name"},
		{[]string{"context", "add", "x", "--server", "nats://h:4222", "--creds", "missing.creds"}, "no such file"},
		{[]string{"context", "use", "nope"}, `no context "nope"`},
		{[]string{"context", "frob"}, "want add, use, ls, show or rm"},
	} {
		if code, _, stderr := cli(c.args...); code == exitOK || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s; want it refused saying %q", c.args, code, stderr, c.want)
		}
	}
	for _, args := range [][]string{
		{"context", "add", "a", "--server", "nats://a:4222"},
		{"context", "add", "b", "--server", "tls://b:4222,tls://c:4222", "--use"},
	} {
		if code, _, stderr := cli(args...); code != exitOK {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
	}
	code, out, _ := cli("context", "ls")
	if code != exitOK || !regexp.MustCompile(`(?m)^\*\s+b\s+tls://b:4222,tls://c:4222\s+anonymous$`).MatchString(out) || !regexp.MustCompile(`(?m)^\s+a\s+nats://a:4222\s`).MatchString(out) {
		t.Fatalf("context ls: exit %d\n%s", code, out)
	}
	if code, out, _ := cli("context", "show"); code != exitOK || !strings.Contains(out, `"name":"b","current":true`) {
		t.Fatalf("context show: exit %d\n%s", code, out)
	}
	path := filepath.Join(home, "config", "contexts.toml")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli("nodes"); code != exitUsage || !strings.Contains(stderr, "chmod 600") {
		t.Fatalf("nodes with a contexts file others may read: exit %d, %s", code, stderr)
	}
}
