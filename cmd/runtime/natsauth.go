package main

import (
	"fmt"
	"io"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/node"
)

// natsAuth prints the authorization block an external NATS server needs to let the
// manifest's users in with their roles' permissions, the same the embedded server grants.
func natsAuth(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("nats-auth", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`: its [[nats.users]]")
	helm := fs.Bool("helm", false, "print values for the official NATS Helm chart instead of server configuration")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 0 {
		fmt.Fprintln(stderr, "agentmux nats-auth: takes no arguments: nats-auth -c <manifest> [--helm]")
		return exitUsage
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	users := node.ServerUsers(m)
	if len(users) == 0 {
		fmt.Fprintf(stderr, "agentmux nats-auth: %s has no [[nats.users]]; add the fleet's users (a node user, operators, …: docs/security.md)\n", *path)
		return exitUsage
	}
	write, what := bus.WriteAuthorization, "include this from nats-server.conf"
	if *helm {
		write, what = bus.WriteHelmAuthorization, "values for the official NATS Helm chart"
	}
	fmt.Fprintf(stdout, "# The NATS users of %s (`agentmux nats-auth`): %s.\n", *path, what)
	fmt.Fprintln(stdout, "# Each may do what its role allows (docs/security.md); each password is the")
	fmt.Fprintln(stdout, "# server's environment variable named here.")
	if err := write(stdout, users); err != nil {
		fmt.Fprintln(stderr, "agentmux nats-auth:", err)
		return exitError
	}
	return exitOK
}
