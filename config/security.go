package config

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Variables that override the client identity of [nats]; no agent, command supervisor
// or tool ever sees them.
const (
	EnvNATSUser     = "AGENTMUX_NATS_USER"
	EnvNATSPassword = "AGENTMUX_NATS_PASSWORD"
	EnvNATSCreds    = "AGENTMUX_NATS_CREDS"
)

// Roles lists the roles of [[nats.users]].
func Roles() []string {
	return []string{RoleNode, RoleOperator, RoleViewer, RoleSupervisor, RoleConsole}
}

// security checks [[nats.users]], the client identity and [nats.tls], and refuses an
// embedded server that anyone beyond this machine could use without an identity.
func (v *validator) security(m *Manifest) {
	n := &m.NATS
	at := func(key ...string) []string { return append([]string{"nats"}, key...) }
	seen := map[string]bool{}
	for i, u := range n.Users {
		v.user(at("users", strconv.Itoa(i)), u, m, seen)
	}
	if n.PasswordEnv != "" && n.User == "" {
		v.add(at("password_env"), `a password needs a user: add user = "…" (or set %s)`, EnvNATSUser)
	}
	v.envName(at("password_env"), n.PasswordEnv)
	if t := n.TLS; t != nil {
		v.tls(at("tls"), t, n.URL == "")
	}
	if n.URL != "" {
		return
	}
	if len(n.Users) == 0 && BeyondLoopback(n.Listen) {
		v.add(at("listen"), "%q lets in anyone who can reach it, and no [[nats.users]] are defined: add users with roles "+
			`(e.g. [[nats.users]] name = "node", password_env = "AGENTMUX_NODE_PASSWORD", role = "node"; see docs/security.md) or listen on 127.0.0.1`, n.Listen)
	}
	if c := n.Cluster; c != nil {
		v.envName(at("cluster", "password_env"), c.PasswordEnv)
		if (c.User == "") != (c.PasswordEnv == "") {
			v.add(at("cluster"), "route authentication needs both user and password_env")
		}
		byCert := n.TLS != nil && n.TLS.Verify
		if c.User == "" && !byCert && BeyondLoopback(c.Listen) {
			v.add(at("cluster", "listen"), "%q takes routes from anyone who can reach it: authenticate the routes with "+
				`user = "route" and password_env = "AGENTMUX_ROUTE_PASSWORD" in [nats.cluster] (the same on every server), or [nats.tls] with verify = true`, c.Listen)
		}
	}
}

func (v *validator) user(path []string, u *User, m *Manifest, seen map[string]bool) {
	if !namePattern.MatchString(u.Name) {
		v.add(path, "a user needs a name of letters, digits, '_' and '-' (it is part of NATS subjects), e.g. name = \"ops\"")
	} else if seen[u.Name] {
		v.add(append(path, "name"), "user %q is defined twice", u.Name)
	}
	seen[u.Name] = true
	switch {
	case u.PasswordEnv == "" && u.Nkey == "":
		v.add(path, "user %q needs password_env (the variable holding its password) or nkey (its public nkey, \"U…\")", u.Name)
	case u.PasswordEnv != "" && u.Nkey != "":
		v.add(path, "user %q has both password_env and nkey; keep one", u.Name)
	case u.Nkey != "" && (!strings.HasPrefix(u.Nkey, "U") || len(u.Nkey) != 56):
		v.add(append(path, "nkey"), "%q is not a public user nkey (56 characters starting with U); `nk -gen user -pubout` makes one", u.Nkey)
	}
	v.envName(append(path, "password_env"), u.PasswordEnv)
	if !slices.Contains(Roles(), u.Role) {
		v.add(append(path, "role"), "user %q: role %q; use one of %s", u.Name, u.Role, strings.Join(Roles(), ", "))
	}
	if u.Role != RoleSupervisor {
		if len(u.Supervisors) > 0 || len(u.Tools) > 0 {
			v.add(path, "user %q: supervisors and tools are for role %q", u.Name, RoleSupervisor)
		}
		return
	}
	if len(u.Supervisors) == 0 && len(u.Tools) == 0 {
		v.add(path, "supervisor user %q needs supervisors (whose asks it takes) or tools (what it serves)", u.Name)
	}
	for i, name := range u.Supervisors {
		s, ok := m.Supervisors[name]
		switch {
		case !namePattern.MatchString(name):
			v.add(append(path, "supervisors", strconv.Itoa(i)), "%q is not a supervisor name", name)
		case ok && s.Strategy != StrategyExternal:
			v.add(append(path, "supervisors", strconv.Itoa(i)), "supervisor %q is run by the nodes (strategy %q); a user answering its asks could claim any decider: name an external supervisor", name, s.Strategy)
		}
	}
	for i, name := range u.Tools {
		if !namePattern.MatchString(name) {
			v.add(append(path, "tools", strconv.Itoa(i)), "%q is not a tool name", name)
		}
	}
}

func (v *validator) tls(path []string, t *TLS, embedded bool) {
	if (t.Cert == "") != (t.Key == "") {
		v.add(path, "a certificate needs its key: set both cert and key")
	}
	if (t.ClientCert == "") != (t.ClientKey == "") {
		v.add(path, "a client certificate needs its key: set both client_cert and client_key")
	}
	if embedded && t.Cert == "" {
		v.add(path, "the embedded server needs cert and key to serve TLS")
	}
	if t.Verify && t.CA == "" {
		v.add(append(path, "verify"), "verify needs ca: the CA that signs the certificates clients and routes present")
	}
}

// envName checks that name could be an environment variable.
func (v *validator) envName(path []string, name string) {
	if name != "" {
		v.envNames(path, []string{name})
	}
}

// secretEnvs are the variables holding the bus's secrets: passed to no child process.
func (m *Manifest) secretEnvs() []string {
	n := m.NATS
	out := []string{EnvNATSUser, EnvNATSPassword, EnvNATSCreds, n.PasswordEnv, m.Metrics.TokenEnv}
	if n.Cluster != nil {
		out = append(out, n.Cluster.PasswordEnv)
	}
	for _, u := range n.Users {
		out = append(out, u.PasswordEnv)
	}
	for _, t := range m.API.Tokens {
		out = append(out, t.TokenEnv) // an operator's token answers as its name
	}
	for _, n := range m.Notify {
		out = append(out, n.SecretEnv, n.ActionKeyEnv, n.SigningSecretEnv) // sign notifications, act as people, or pass for Slack
	}
	if o := m.Console.OIDC; o != nil {
		out = append(out, o.ClientSecretEnv) // it signs the console's sign-ins
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// noSecrets checks every child process's environment.
func (v *validator) noChildSecrets(m *Manifest) {
	for name, h := range m.Hosts {
		v.noSecrets([]string{"hosts", name}, h.InheritEnv, h.Env, m)
		v.hostModel(name, h, m)
	}
	for name, s := range m.Supervisors {
		v.noSecrets([]string{"supervisors", name}, s.InheritEnv, s.Env, m)
	}
	for name, t := range m.Tools {
		v.noSecrets([]string{"tools", name}, t.InheritEnv, t.Env, m)
	}
}

// noSecrets refuses to pass a credential of the bus to an agent, command or tool: one
// the manifest names, or any of agentmux's own by its name, whether or not this
// manifest uses it (AGENTMUX_CONSOLE_TOKEN signs people in to a console).
func (v *validator) noSecrets(path []string, inherit []string, env map[string]string, m *Manifest) {
	secrets := m.secretEnvs()
	for i, name := range inherit {
		if slices.Contains(secrets, name) || agentmuxSecret(name) {
			v.add(append(path, "inherit_env", strconv.Itoa(i)), "%s holds a credential of the bus; an agent or command that had it could answer its own requests: leave it out", name)
		}
	}
	for name := range env {
		if slices.Contains(secrets, name) || agentmuxSecret(name) {
			v.add(append(path, "env", name), "%s names a credential of the bus; pass it to no agent or command", name)
		}
	}
}

// agentmuxSecret reports whether name is one of agentmux's own secrets by its name:
// AGENTMUX_ and a token, secret, password, key or credentials.
func agentmuxSecret(name string) bool {
	if !strings.HasPrefix(name, "AGENTMUX_") {
		return false
	}
	for _, kind := range []string{"_TOKEN", "_SECRET", "_PASSWORD", "_KEY", "_CREDS", "_NKEY", "_SEED"} {
		if strings.HasSuffix(name, kind) {
			return true
		}
	}
	return false
}

// BeyondLoopback reports whether a listener at host:port can be reached from other
// machines: any address but a loopback one ("0.0.0.0", "", a hostname, a LAN address).
func BeyondLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false // reported elsewhere
	}
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// providerKeys are the variables agents read their provider's key from.
var providerKeys = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CODEX_API_KEY"}

// hostModel checks a host's model: a connection of the manifest the gateway speaks.
// A host that still passes a provider's key to its agents (by env or inherit_env)
// while a connection could keep it in the node is warned of.
func (v *validator) hostModel(name string, h *Host, m *Manifest) {
	at := []string{"hosts", name, "model"}
	if h.Model != nil {
		c := m.Connections[h.Model.Connection]
		switch {
		case h.Model.Connection == "":
			v.add(at, `model needs a connection, e.g. model = { connection = "anthropic" } with a [connections.anthropic] table`)
		case c == nil:
			v.add(append(at, "connection"), "no connection %q; define [connections.%s] or name one of %s", h.Model.Connection, h.Model.Connection, names(m.Connections))
		case c.Provider != ProviderAnthropic && c.Provider != ProviderGemini && !OpenAICompatible(c.Provider):
			v.add(append(at, "connection"), "connection %q speaks %q, which the gateway does not: give it provider = \"anthropic\", \"gemini\" or an OpenAI-compatible one", c.Name, c.Provider)
		case h.Dialect == "claude-code" && c.Provider != ProviderAnthropic:
			v.add(append(at, "connection"), "Claude Code speaks Anthropic's Messages API, and connection %q is %q: give this host an anthropic connection", c.Name, c.Provider)
		case h.Dialect == "codex" && !OpenAICompatible(c.Provider):
			v.add(append(at, "connection"), "Codex speaks OpenAI's Responses API, and connection %q is %q: give this host an OpenAI-compatible connection", c.Name, c.Provider)
		}
	}
	if len(m.Connections) == 0 {
		return
	}
	keys := slices.Clone(providerKeys)
	for _, c := range m.Connections {
		if c.APIKeyEnv != "" {
			keys = append(keys, c.APIKeyEnv)
		}
	}
	passed := func(key string) bool {
		_, inEnv := h.Env[key]
		return inEnv || slices.Contains(h.InheritEnv, key)
	}
	for _, key := range keys {
		if passed(key) {
			v.warn([]string{"hosts", name}, "passes %s to its agents, who could send the key anywhere: set model = { connection = \"…\" } to keep it in the node's gateway, and leave it out", key)
			return
		}
	}
}
