package config

import (
	"net"
	"net/url"
	"slices"
)

// Console is `agentmux console`'s own settings ([console]).
type Console struct {
	OIDC *OIDC `toml:"oidc"`
}

// OIDC signs people in to the console with the team's identity provider
// ([console.oidc]): OpenID Connect's authorization code flow with PKCE. The name the
// provider vouches for is who a person's answers are recorded as (human:<name>), and
// their groups give their role.
type OIDC struct {
	Issuer string `toml:"issuer"`
	// ClientID and the variable holding the client's secret, as registered with the
	// provider.
	ClientID        string `toml:"client_id"`
	ClientSecretEnv string `toml:"client_secret_env"`
	// RedirectURL is the console's /oidc/callback as people reach it, registered with
	// the provider; empty: the address the browser used.
	RedirectURL string `toml:"redirect_url"`
	// Scopes asked for beside "openid"; default email and profile. A provider that
	// gives groups only for a scope ("groups") needs it here.
	Scopes []string `toml:"scopes"`
	// NameClaim is the claim that names a person (default email, which must be
	// verified); GroupsClaim holds their groups (default groups).
	NameClaim   string `toml:"name_claim"`
	GroupsClaim string `toml:"groups_claim"`
	// AllowedGroups may sign in and look; OperatorGroups may also answer requests and
	// submit tasks. Anyone in neither is refused.
	AllowedGroups  []string `toml:"allowed_groups"`
	OperatorGroups []string `toml:"operator_groups"`
}

// Defaults of [console.oidc].
const (
	DefaultOIDCNameClaim   = "email"
	DefaultOIDCGroupsClaim = "groups"
)

// DefaultOIDCScopes are asked for beside openid unless scopes says otherwise.
var DefaultOIDCScopes = []string{"email", "profile"}

// Role is the console role of a person in groups: APIOperator, APIViewer, or "" when
// none of their groups may sign in.
func (o *OIDC) Role(groups []string) string {
	in := func(allowed []string) bool {
		return slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(allowed, g) })
	}
	switch {
	case in(o.OperatorGroups):
		return APIOperator
	case in(o.AllowedGroups):
		return APIViewer
	}
	return ""
}

func (v *validator) console(c *Console) {
	o := c.OIDC
	if o == nil {
		return
	}
	at := func(key string) []string { return []string{"console", "oidc", key} }
	if u, err := url.Parse(o.Issuer); o.Issuer == "" || err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
		v.add(at("issuer"), `%q is not an issuer: give the provider's https URL, e.g. issuer = "https://accounts.example.com" (http only on this machine)`, o.Issuer)
	}
	if o.ClientID == "" {
		v.add(at("client_id"), "give the client id the console is registered with at the provider")
	}
	if o.ClientSecretEnv == "" {
		v.add(at("client_secret_env"), "give the variable that holds the client's secret (the secret itself never goes in the manifest)")
	}
	v.envName(at("client_secret_env"), o.ClientSecretEnv)
	if o.RedirectURL != "" {
		if u, err := url.Parse(o.RedirectURL); err != nil || u.Host == "" || u.Path != "/oidc/callback" {
			v.add(at("redirect_url"), `%q is not the console's callback: give its URL as people reach it, ending in /oidc/callback`, o.RedirectURL)
		}
	}
	if len(o.AllowedGroups) == 0 && len(o.OperatorGroups) == 0 {
		v.add([]string{"console", "oidc"}, "name allowed_groups (may look) or operator_groups (may answer): everyone the provider knows is not whom a console should let in")
	}
	if o.NameClaim == "" {
		o.NameClaim = DefaultOIDCNameClaim
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = DefaultOIDCGroupsClaim
	}
	if o.Scopes == nil {
		o.Scopes = DefaultOIDCScopes
	}
}

func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
