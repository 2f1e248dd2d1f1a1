package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestNATSAuth: a manifest naming an external server may list that server's users;
// nats-auth prints them for its configuration file or the Helm chart (bus tests load
// both into nats-server), and says what is missing when there are none.
func TestNATSAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(`[nats]
url = "nats://nats1:4222,nats://nats2:4222"
user = "fleet"
password_env = "AGENTMUX_FLEET_PASSWORD"
[[nats.users]]
name = "fleet"
password_env = "AGENTMUX_FLEET_PASSWORD"
role = "node"
[[nats.users]]
name = "pager"
nkey = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
role = "supervisor"
supervisors = ["oncall"]
[supervisors.oncall]
strategy = "external"
[hosts.w]
command = "true"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := runtimeProc(t, "nats-auth", "-c", manifest)
	if code := conf.wait(t, 10*time.Second); code != exitOK {
		t.Fatalf("nats-auth: exit %d, %s", code, conf.stderr)
	}
	for _, want := range []string{"authorization {", `user: "fleet"`, "password: $AGENTMUX_FLEET_PASSWORD", `nkey: "UDXU4`, `"agentmux.ask.oncall"`} {
		if !strings.Contains(conf.stdout.String(), want) {
			t.Errorf("nats-auth lacks %s:\n%s", want, conf.stdout)
		}
	}
	helm := runtimeProc(t, "nats-auth", "-c", manifest, "--helm")
	if code := helm.wait(t, 10*time.Second); code != exitOK || !strings.Contains(helm.stdout.String(), `password: "<< $AGENTMUX_FLEET_PASSWORD >>"`) {
		t.Fatalf("nats-auth --helm: exit %d\n%s", code, helm.stdout)
	}

	bare := filepath.Join(dir, "bare.toml")
	if err := os.WriteFile(bare, []byte("[hosts.w]\ncommand = \"true\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := runtimeProc(t, "nats-auth", "-c", bare)
	if code := none.wait(t, 10*time.Second); code != exitUsage || !strings.Contains(none.stderr.String(), "has no [[nats.users]]") {
		t.Fatalf("nats-auth without users: exit %d, %s", code, none.stderr)
	}
}

// TestNATSAuthServesTheFleet: a NATS server configured with nothing but what nats-auth
// prints carries a fleet. A node on it, holding only its own password, comes up and
// runs an operator's task; a viewer's submit is refused by the server.
func TestNATSAuthServesTheFleet(t *testing.T) {
	dir := t.TempDir()
	port := proctest.FreePort(t)
	manifest := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`[nats]
url = "nats://127.0.0.1:%d"
user = "fleet"
password_env = "T_FLEET_PW"
[[nats.users]]
name = "fleet"
password_env = "T_FLEET_PW"
role = "node"
[[nats.users]]
name = "ops"
password_env = "T_OPS_PW"
role = "operator"
[[nats.users]]
name = "view"
password_env = "T_VIEW_PW"
role = "viewer"
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
[supervisors.qa]
strategy = "rule"
rules = [{ type = "question", match = "tests", answer = "yes" }]
`, port, os.Args[0])), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := runtimeProc(t, "nats-auth", "-c", manifest)
	if code := auth.wait(t, 10*time.Second); code != exitOK {
		t.Fatalf("nats-auth: exit %d, %s", code, auth.stderr)
	}
	conf := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q }\n%s", port, filepath.Join(dir, "js"), auth.stdout)), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := map[string]string{"T_FLEET_PW": nuid.Next(), "T_OPS_PW": nuid.Next(), "T_VIEW_PW": nuid.Next()}
	for k, v := range pw {
		t.Setenv(k, v) // the server reads them from its environment
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server refuses nats-auth's output: %v", err)
	}
	for k := range pw {
		os.Unsetenv(k) // and the processes below get only their own
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the NATS server did not start")
	}

	upCmd := exec.Command(os.Args[0], "up", "-c", manifest, "--name", "ext1")
	upCmd.Env = []string{"T_FLEET_PW=" + pw["T_FLEET_PW"]}
	up := startProc(t, upCmd)
	until(t, "agentmux up on the external server", up.stderr, "node up")

	submit := func(user string) *proc {
		cmd := exec.Command(os.Args[0], "submit", "-c", manifest, "w", okScript, "--follow")
		cmd.Env = []string{"AGENTMUX_NATS_USER=" + user, "AGENTMUX_NATS_PASSWORD=" + pw["T_"+strings.ToUpper(user)+"_PW"]}
		return startProc(t, cmd)
	}
	ops := submit("ops")
	if code := ops.wait(t, 60*time.Second); code != exitOK || !strings.Contains(ops.stdout.String(), `"text":"all green"`) {
		t.Fatalf("operator's task: exit %d\nstdout %s\nstderr %s\nnode:\n%s", code, ops.stdout, ops.stderr, up.stderr)
	}
	view := submit("view")
	if code := view.wait(t, 30*time.Second); code != exitError || !strings.Contains(view.stderr.String(), `may not publish to "agentmux.task.w.view"`) {
		t.Fatalf("viewer's submit: exit %d, stderr %s", code, view.stderr)
	}
}
