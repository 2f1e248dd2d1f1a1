package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/notify"
)

// Users are the manifest's [[nats.users]] with their passwords read from the
// environment; a password variable that is unset is an error, not an open door.
func Users(m *config.Manifest, getenv func(string) string) ([]bus.User, error) {
	var out []bus.User
	for _, u := range m.NATS.Users {
		b := serverUser(u).User
		if u.PasswordEnv != "" {
			if b.Password = getenv(u.PasswordEnv); b.Password == "" {
				return nil, errors.New("node: " + unsetPassword(u))
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// ServerUsers are the manifest's [[nats.users]] as an external server's configuration
// names them: passwords by the variables that hold them.
func ServerUsers(m *config.Manifest) []bus.ServerUser {
	var out []bus.ServerUser
	for _, u := range m.NATS.Users {
		out = append(out, serverUser(u))
	}
	return out
}

func serverUser(u *config.User) bus.ServerUser {
	return bus.ServerUser{
		User:        bus.User{Name: u.Name, Nkey: u.Nkey, Role: bus.Role(u.Role), Supervisors: u.Supervisors, Tools: u.Tools},
		PasswordVar: u.PasswordEnv,
	}
}

// Identity is who the CLI, or a node on an external server, is on the bus: [nats] user,
// password_env, credentials and nkey_seed_file, overridden by AGENTMUX_NATS_USER,
// AGENTMUX_NATS_PASSWORD and AGENTMUX_NATS_CREDS, so one manifest serves several people.
func Identity(m *config.Manifest, getenv func(string) string) (bus.Identity, error) {
	n := m.NATS
	id := bus.Identity{User: n.User, Credentials: n.Credentials, NkeySeedFile: n.NkeySeedFile}
	if n.PasswordEnv != "" {
		id.Password = getenv(n.PasswordEnv)
	}
	if v := getenv(config.EnvNATSUser); v != "" {
		id.User = v
	}
	if v := getenv(config.EnvNATSPassword); v != "" {
		id.Password = v
	}
	if v := getenv(config.EnvNATSCreds); v != "" {
		id = bus.Identity{Credentials: v}
	}
	if id.User != "" && id.Password == "" {
		return id, fmt.Errorf("node: user %q has no password: set %s (or the variable [nats] password_env names)", id.User, config.EnvNATSPassword)
	}
	return id, nil
}

// UserName is the name the bus knows id by, nkeys mapped to the manifest's users.
func UserName(m *config.Manifest, id bus.Identity) (string, error) {
	names := map[string]string{}
	for _, u := range m.NATS.Users {
		if u.Nkey != "" {
			names[u.Nkey] = u.Name
		}
	}
	return id.Name(names)
}

// TLS is the manifest's [nats.tls], or nil.
func TLS(m *config.Manifest) *bus.TLS {
	t := m.NATS.TLS
	if t == nil {
		return nil
	}
	return &bus.TLS{Cert: t.Cert, Key: t.Key, CA: t.CA, Verify: t.Verify, ClientCert: t.ClientCert, ClientKey: t.ClientKey}
}

// metricsToken is the bearer token /metrics requires: [metrics] token_env's value. An
// endpoint other machines can reach without one is logged, not refused: metrics are
// often scraped inside a trusted network.
func metricsToken(opts Options, addr string) (string, error) {
	env := opts.Manifest.Metrics.TokenEnv
	if env == "" {
		if config.BeyondLoopback(addr) {
			opts.Log.Warn("metrics are served beyond loopback without a token; set [metrics] token_env to require one", "addr", addr)
		}
		return "", nil
	}
	token := getenv(opts)(env)
	if token == "" {
		return "", errors.New("node: " + unsetMetricsToken(env))
	}
	return token, nil
}

// getenv is how the node reads its secrets.
func getenv(opts Options) func(string) string {
	if opts.Getenv != nil {
		return opts.Getenv
	}
	return os.Getenv
}

// MissingSecrets lists, as `agentmux up` would refuse to start for them, the variables
// the manifest names for secrets that getenv does not hold: users' passwords, the
// routes' password, the metrics token and the webhooks' signing secrets. `agentmux
// validate` reports them.
func MissingSecrets(m *config.Manifest, getenv func(string) string) []string {
	var out []string
	missing := func(env string) bool { return env != "" && getenv(env) == "" }
	if m.NATS.URL == "" {
		for _, u := range m.NATS.Users {
			if missing(u.PasswordEnv) {
				out = append(out, unsetPassword(u))
			}
		}
		if c := m.NATS.Cluster; c != nil && missing(c.PasswordEnv) {
			out = append(out, unsetRoutePassword(c.PasswordEnv))
		}
	}
	if missing(m.Metrics.TokenEnv) {
		out = append(out, unsetMetricsToken(m.Metrics.TokenEnv))
	}
	for _, name := range slices.Sorted(maps.Keys(m.Notify)) {
		if n := m.Notify[name]; missing(n.SecretEnv) {
			out = append(out, notify.UnsetSecret(n))
		}
	}
	return out
}

// What `up` says of a secret's variable left unset, and `validate` warns of.
func unsetPassword(u *config.User) string {
	return fmt.Sprintf("user %q: %s is not set; export its password there (or give the user an nkey)", u.Name, u.PasswordEnv)
}

func unsetRoutePassword(env string) string {
	return fmt.Sprintf("[nats.cluster] %s is not set; export the routes' password there, the same on every server", env)
}

func unsetMetricsToken(env string) string {
	return fmt.Sprintf("[metrics] token_env: %s is not set; export the token /metrics requires there", env)
}
