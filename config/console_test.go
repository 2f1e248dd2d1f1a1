package config

import (
	"slices"
	"strings"
	"testing"
)

// [console.oidc]: its defaults, the role a person's groups give, and what it cannot
// be, said with the key.
func TestConsoleOIDC(t *testing.T) {
	const oidc = `
[console.oidc]
issuer = "https://accounts.example.com"
client_id = "agentmux"
client_secret_env = "AGENTMUX_OIDC_SECRET"
allowed_groups = ["eng"]
operator_groups = ["sre"]
[hosts.w]
command = "w"
`
	m, err := Parse("agentmux.toml", []byte(oidc+`inherit_env = ["AGENTMUX_OIDC_SECRET"]
`))
	if err == nil || !strings.Contains(err.Error(), "AGENTMUX_OIDC_SECRET holds a credential") {
		t.Fatalf("an agent given the console's client secret: %v", err)
	}
	m, err = Parse("agentmux.toml", []byte(oidc))
	if err != nil {
		t.Fatal(err)
	}
	o := m.Console.OIDC
	if o.NameClaim != "email" || o.GroupsClaim != "groups" || !slices.Equal(o.Scopes, []string{"email", "profile"}) {
		t.Errorf("defaults: %+v", o)
	}
	for groups, want := range map[string]string{"sre": APIOperator, "eng,sre": APIOperator, "eng": APIViewer, "contractors": "", "": ""} {
		if got := o.Role(strings.Split(groups, ",")); got != want {
			t.Errorf("groups %q: role %q, want %q", groups, got, want)
		}
	}

	const ok = "client_id = \"a\"\nclient_secret_env = \"S\"\nallowed_groups = [\"eng\"]\n"
	for _, tc := range []struct{ name, src, want string }{
		{"no issuer", "[console.oidc]\n" + ok, `"" is not an issuer`},
		{"plain http elsewhere", "[console.oidc]\nissuer = \"http://idp.example\"\n" + ok, `give the provider's https URL`},
		{"no client", "[console.oidc]\nissuer = \"http://127.0.0.1:9\"\nclient_secret_env = \"S\"\nallowed_groups = [\"eng\"]\n", `give the client id`},
		{"no secret", "[console.oidc]\nissuer = \"https://idp.example\"\nclient_id = \"a\"\nallowed_groups = [\"eng\"]\n", `give the variable that holds the client's secret`},
		{"no groups", "[console.oidc]\nissuer = \"https://idp.example\"\nclient_id = \"a\"\nclient_secret_env = \"S\"\n", `name allowed_groups (may look) or operator_groups (may answer)`},
		{"a callback elsewhere", "[console.oidc]\nissuer = \"https://idp.example\"\nredirect_url = \"https://c.example/cb\"\n" + ok, `ending in /oidc/callback`},
		{"an unknown key", "[console.oidc]\nissuer = \"https://idp.example\"\ngroups = [\"x\"]\n" + ok, `unknown key "groups"`},
	} {
		e := parseErr(t, tc.src)
		if !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%s: %v\nwant it to say %q", tc.name, e, tc.want)
		}
	}
}

// What lets people act from a notification is checked with the key.
func TestNotifyActions(t *testing.T) {
	const hook = "[notify.n]\nwebhook = \"https://hooks.example/x\"\nevents = [\"human.pending\"]\n"
	for _, tc := range []struct{ name, src, want string }{
		{"people without a key", hook + "secret_env = \"S\"\nconsole_url = \"https://c.example\"\npeople = [\"alice@example.com\"]\n", `set action_key_env`},
		{"people without the console", hook + "secret_env = \"S\"\naction_key_env = \"K\"\npeople = [\"alice@example.com\"]\n", `set console_url`},
		{"a person no subject can name", hook + "secret_env = \"S\"\naction_key_env = \"K\"\nconsole_url = \"https://c.example\"\npeople = [\"alice smith\"]\n", `"alice smith" cannot name a person`},
		{"people on slack", hook + "format = \"slack\"\naction_key_env = \"K\"\nconsole_url = \"https://c.example\"\npeople = [\"a@x.io\"]\n", `a slack notify acts through its buttons`},
		{"users without the signing secret", hook + "format = \"slack\"\nusers = { U1 = \"a@x.io\" }\n", `set signing_secret_env`},
		{"users of a json notify", hook + "secret_env = \"S\"\nusers = { U1 = \"a@x.io\" }\nsigning_secret_env = \"G\"\n", `users maps Slack users, for format = "slack"`},
	} {
		e := parseErr(t, tc.src)
		if !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%s: %v\nwant it to say %q", tc.name, e, tc.want)
		}
	}
}
