package config

import "strconv"

// Roles an API token can carry: what the bus's roles of the same names may do, and
// hook, which may only put its agents' requests to the fleet.
const (
	APIOperator = "operator"
	APIViewer   = "viewer"
	APIHook     = "hook"
)

// API is the console's HTTP API under /v1 ([api]).
type API struct {
	Tokens []*APIToken `toml:"tokens"`
}

// APIToken is one bearer token of the API ([[api.tokens]]): a name (who its writes are
// done and audited as), the variable the console reads its secret from, and its role.
type APIToken struct {
	Name     string `toml:"name"`
	TokenEnv string `toml:"token_env"`
	Role     string `toml:"role"`
}

func (v *validator) api(a *API) {
	seen := map[string]bool{}
	for i, t := range a.Tokens {
		at := func(key string) []string { return []string{"api", "tokens", strconv.Itoa(i), key} }
		switch {
		case !namePattern.MatchString(t.Name):
			v.add(at("name"), "token name %q may only hold letters, digits, '_' and '-': it is who the token's writes are recorded as", t.Name)
		case seen[t.Name]:
			v.add(at("name"), "a second token named %q; each token names one identity", t.Name)
		}
		seen[t.Name] = true
		if t.TokenEnv == "" {
			v.add(at("token_env"), "a token needs token_env, the variable its secret is read from (the secret itself never goes in the manifest)")
		}
		v.enum(at("role"), &t.Role, "", "a token role", APIOperator, APIViewer, APIHook)
	}
}
