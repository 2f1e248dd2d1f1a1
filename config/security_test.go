package config

import (
	"os"
	"strings"
	"testing"
)

func TestSecureManifest(t *testing.T) {
	m, err := Parse("m.toml", []byte(`
[nats]
listen = "0.0.0.0:4222"
user = "ops"
password_env = "AGENTMUX_OPS_PASSWORD"
[nats.tls]
cert = "server.pem"
key = "server-key.pem"
ca = "ca.pem"
verify = true
client_cert = "ops.pem"
client_key = "ops-key.pem"
[[nats.users]]
name = "ops"
password_env = "AGENTMUX_OPS_PASSWORD"
role = "operator"
[[nats.users]]
name = "pager"
nkey = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
role = "supervisor"
supervisors = ["oncall"]
tools = ["search"]
[metrics]
addr = "0.0.0.0:9464"
token_env = "AGENTMUX_METRICS_TOKEN"
[supervisors.oncall]
strategy = "external"
[hosts.w]
command = "x"
inherit_env = ["HOME"]
`))
	if err != nil {
		t.Fatal(err)
	}
	n := m.NATS
	if len(n.Users) != 2 || n.Users[1].Role != RoleSupervisor || n.Users[1].Supervisors[0] != "oncall" || !n.TLS.Verify || n.User != "ops" {
		t.Fatalf("nats %+v", n)
	}
	if m.Metrics.TokenEnv != "AGENTMUX_METRICS_TOKEN" {
		t.Fatalf("metrics %+v", m.Metrics)
	}
}

func TestUnsafeManifests(t *testing.T) {
	for _, c := range []struct {
		name, toml string
		want       []string
	}{
		{"open listener", `
[nats]
listen = "0.0.0.0:4222"`, []string{`nats.listen (m.toml:3:1): "0.0.0.0:4222" lets in anyone who can reach it, and no [[nats.users]] are defined`, "or listen on 127.0.0.1"}},
		{"hostname listener", `
[nats]
listen = "nats.internal:4222"`, []string{`"nats.internal:4222" lets in anyone`}},
		{"open routes", `
[nats]
server_name = "n1"
[[nats.users]]
name = "n"
password_env = "P"
role = "node"
[nats.cluster]
name = "c"
listen = "10.0.0.1:6222"`, []string{`nats.cluster.listen`, `takes routes from anyone who can reach it`, `[nats.tls] with verify = true`}},
		{"half route auth", `
[nats]
server_name = "n1"
[nats.cluster]
name = "c"
listen = "127.0.0.1:6222"
user = "route"`, []string{`route authentication needs both user and password_env`}},
		{"bad users", `
[[nats.users]]
name = "a b"
password_env = "P"
role = "admin"
[[nats.users]]
name = "k"
password_env = "P"
nkey = "UABC"
role = "viewer"
[[nats.users]]
name = "x"
role = "viewer"
supervisors = ["s"]
[[nats.users]]
name = "y"
nkey = "SUAB"
role = "supervisor"
[[nats.users]]
name = "y"
password_env = "P"
role = "supervisor"
supervisors = ["inproc"]
[supervisors.inproc]
strategy = "static"
answers = { question = "ok" }`, []string{
			`a user needs a name of letters`,
			`role "admin"; use one of node, operator, viewer, supervisor`,
			`user "k" has both password_env and nkey; keep one`,
			`user "x" needs password_env`,
			`user "x": supervisors and tools are for role "supervisor"`,
			`"SUAB" is not a public user nkey`,
			`supervisor user "y" needs supervisors`,
			`user "y" is defined twice`,
			`supervisor "inproc" is run by the nodes (strategy "static"); a user answering its asks could claim any decider`,
		}},
		{"password without user", `
[nats]
password_env = "P"`, []string{`a password needs a user: add user = "…" (or set AGENTMUX_NATS_USER)`}},
		{"tls", `
[nats.tls]
verify = true
client_cert = "c.pem"`, []string{`the embedded server needs cert and key`, `verify needs ca`, `set both client_cert and client_key`}},
		{"secrets to children", `
[[nats.users]]
name = "ops"
password_env = "AGENTMUX_OPS_PASSWORD"
role = "operator"
[metrics]
token_env = "AGENTMUX_METRICS_TOKEN"
[hosts.w]
command = "x"
inherit_env = ["HOME", "AGENTMUX_OPS_PASSWORD", "AGENTMUX_NATS_CREDS", "AGENTMUX_CONSOLE_TOKEN", "AGENTMUX_STATE_DIR"]
[supervisors.c]
strategy = "command"
command = "x"
env = { AGENTMUX_METRICS_TOKEN = "t" }`, []string{
			`hosts.w.inherit_env.1`, `AGENTMUX_OPS_PASSWORD holds a credential of the bus`,
			`AGENTMUX_NATS_CREDS holds a credential of the bus`,
			`hosts.w.inherit_env.3 (m.toml:10:1): AGENTMUX_CONSOLE_TOKEN holds a credential of the bus`,
			`supervisors.c.env.AGENTMUX_METRICS_TOKEN`, `names a credential of the bus`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("m.toml", []byte(c.toml+"\n[hosts.h]\ncommand = \"x\"\n"))
			if err == nil {
				t.Fatal("an unsafe manifest loaded")
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("problems lack %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestDocumentedProductionManifest keeps docs/security.md's production manifest valid.
func TestDocumentedProductionManifest(t *testing.T) {
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A production manifest")
	if !ok {
		t.Fatal("docs/security.md has no production manifest")
	}
	_, block, _ := strings.Cut(rest, "```toml\n")
	block, _, _ = strings.Cut(block, "```")
	m, err := Parse("security.md", []byte(block))
	if err != nil {
		t.Fatalf("the documented production manifest does not load:\n%v", err)
	}
	if len(m.NATS.Users) != 3 || m.NATS.TLS == nil || m.NATS.Cluster.User != "route" {
		t.Fatalf("the documented manifest lost its security: %+v", m.NATS)
	}
}
