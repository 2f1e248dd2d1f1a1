package bench

import (
	"os"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
)

// A server loadgen embeds lets no anonymous client in, as a node's does not: it lets in
// one node user whose password loadgen makes up, and gives it to every client it starts
// (the baselines' responder, the Node.js harness, the fleet's node processes). On an
// external server (--nats) loadgen is who AGENTMUX_NATS_USER and AGENTMUX_NATS_PASSWORD
// say.

// loadgenUserName is the user loadgen's own servers know it by.
const loadgenUserName = "loadgen"

// busUser is who loadgen's clients are on a server it embeds.
type busUser struct{ bus.User }

func newBusUser() busUser {
	return busUser{bus.User{Name: loadgenUserName, Password: nuid.Next() + nuid.Next(), Role: bus.RoleNode}}
}

// identity is how a client connects as u.
func (u busUser) identity() bus.Identity { return bus.Identity{User: u.Name, Password: u.Password} }

// env says who u is to a process loadgen starts, as the CLI's variables do.
func (u busUser) env() []string {
	return []string{config.EnvNATSUser + "=" + u.Name, config.EnvNATSPassword + "=" + u.Password}
}

// externalIdentity is who loadgen is on an external server: what the CLI's variables
// say, as for any client (node.Identity).
func externalIdentity() (bus.Identity, error) {
	return node.Identity(&config.Manifest{}, os.Getenv)
}
