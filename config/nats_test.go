package config

import (
	"strings"
	"testing"
)

func TestClusterManifest(t *testing.T) {
	m, err := Parse("m.toml", []byte(`
[nats]
listen = "0.0.0.0:4222"
server_name = "n1"
replicas = 3
sync_interval = "always"
[nats.cluster]
name = "agentmux"
listen = "0.0.0.0:6222"
routes = ["nats://10.0.0.2:6222", "nats://10.0.0.3:6222"]
user = "route"
password_env = "AGENTMUX_ROUTE_PASSWORD"
[[nats.users]]
name = "ops"
password_env = "AGENTMUX_OPS_PASSWORD"
role = "operator"
[hosts.w]
command = "x"
`))
	if err != nil {
		t.Fatal(err)
	}
	n := m.NATS
	if n.ServerName != "n1" || n.Replicas != 3 || !n.SyncAlways || n.Cluster == nil || n.Cluster.Name != "agentmux" || len(n.Cluster.Routes) != 2 {
		t.Fatalf("nats %+v cluster %+v", n, n.Cluster)
	}
}

func TestClusterManifestProblems(t *testing.T) {
	_, err := Parse("m.toml", []byte(`
[nats]
url = "nats://elsewhere:4222"
replicas = 7
sync_interval = "sometimes"
[nats.cluster]
name = "a b"
listen = "6222"
routes = ["10.0.0.2:6222"]
[hosts.w]
command = "x"
`))
	if err == nil {
		t.Fatal("a bad cluster table loaded")
	}
	for _, want := range []string{
		`nats.replicas (m.toml:4:1): 7 replicas; use 1 to 5`,
		`nats.sync_interval (m.toml:5:1): "sometimes" is neither "always" nor a duration`,
		`[nats.cluster] configures the embedded server, but url = "nats://elsewhere:4222" connects to an external one`,
		`nats.cluster.name`,
		`nats.server_name`, `a server in a cluster needs a name of its own`,
		`nats.cluster.listen`, `"6222"`,
		`"10.0.0.2:6222" is not a route; use nats://host:port`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}
