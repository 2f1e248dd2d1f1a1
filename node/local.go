package node

import (
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
)

// EnvStateDir names the directory a node keeps its local state in (the local operator's
// credential); unset: $XDG_STATE_HOME/agentmux, or ~/.local/state/agentmux.
const EnvStateDir = "AGENTMUX_STATE_DIR"

// StateDir is the directory a node keeps its local state in.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvStateDir); d != "" {
		return d, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentmux"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errors.New("node: no state directory: set " + EnvStateDir + " (or HOME)")
		}
	}
	return filepath.Join(home, ".local", "state", "agentmux"), nil
}

// LocalCredentials is the local operator's credential of the node the manifest m
// describes on this machine, when there is one to find: m names no [[nats.users]] and
// its server is this machine's (an embedded one, or a url on loopback), and a node
// wrote the file. The CLI connects with it when it has no identity of its own.
func LocalCredentials(m *config.Manifest, getenv func(string) string) (string, bool) {
	if len(m.NATS.Users) > 0 {
		return "", false
	}
	port := localPort(m)
	dir, err := StateDir(getenv)
	if port == 0 || err != nil {
		return "", false
	}
	path := bus.LocalCredentials(dir, port)
	if _, err := os.Stat(path); err != nil {
		return path, false
	}
	return path, true
}

// localPort is the port of the node's server on this machine, or 0.
func localPort(m *config.Manifest) int {
	hostPort := m.NATS.Listen
	if m.NATS.URL != "" {
		u, err := url.Parse(m.NATS.URL)
		if err != nil {
			return 0
		}
		hostPort = u.Host
	}
	host, p, err := net.SplitHostPort(hostPort)
	if err != nil || config.BeyondLoopback(hostPort) || host == "" {
		return 0
	}
	port, _ := strconv.Atoi(p)
	return port
}
