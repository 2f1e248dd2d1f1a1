package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/wire"
)

func validate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	for _, w := range m.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	// What `up` would refuse on this machine: a manifest is often checked where its
	// secrets are not, so these are warnings here.
	for _, problem := range append(node.MissingSecrets(m, os.Getenv), node.AgentsAsRoot(m)...) {
		fmt.Fprintln(stderr, "warning: agentmux up would refuse to start:", problem)
	}
	fmt.Fprintf(stdout, "%s: ok (%d hosts, %d supervisors, %d routes)\n", *path, len(m.Hosts), len(m.Supervisors), len(m.Routes))
	return exitOK
}

// loadManifest loads path, printing problems; on failure it returns nil and the exit code.
func loadManifest(path string, stderr io.Writer) (*config.Manifest, int) {
	m, err := config.Load(path)
	if err != nil {
		// A bad manifest (config.ErrInvalid) and an unreadable one are both usage errors.
		fmt.Fprintln(stderr, err)
		return nil, exitUsage
	}
	return m, exitOK
}

// sessionArgs checks the <host> "<prompt>" arguments of run and submit against
// manifest m (nil: a fleet reached without one, whose hosts the nodes know); on
// failure it returns the exit code, having said why.
func sessionArgs(cmd string, pos []string, m *config.Manifest, stderr io.Writer) (string, string, int) {
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "agentmux %s: want a host and a prompt: %s <host> \"<prompt>\"\n", cmd, cmd)
		return "", "", exitUsage
	}
	if m == nil {
		if !wire.IsName(pos[0]) {
			fmt.Fprintf(stderr, "agentmux %s: %q cannot be a host's name: letters, digits, '_' and '-'\n", cmd, pos[0])
			return "", "", exitUsage
		}
		return pos[0], pos[1], exitOK
	}
	h, ok := m.Hosts[pos[0]]
	switch {
	case !ok:
		fmt.Fprintf(stderr, "agentmux %s: no host %q in %s; the hosts are %s\n", cmd, pos[0], m.Path, hostNames(m))
		return "", "", exitUsage
	case h.Attached != nil:
		fmt.Fprintf(stderr, "agentmux %s: %q is an attached source: its sessions are started by people, and come to agentmux through their hooks; name a [hosts] entry\n", cmd, pos[0])
		return "", "", exitUsage
	}
	return pos[0], pos[1], exitOK
}

func hostNames(m *config.Manifest) string {
	names := make([]string, 0, len(m.Hosts))
	for name := range m.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
