package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNATSAuth: a manifest naming an external server may list that server's users;
// nats-auth prints them for its configuration file or the Helm chart (bus tests load
// both into nats-server), and says what is missing when there are none.
func TestNATSAuth(t *testing.T) {
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
