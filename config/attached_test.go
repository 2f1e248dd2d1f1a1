package config

import (
	"strings"
	"testing"
	"time"
)

// An attached source is a host of its own: routes and stages see it by its name, its
// defaults are a host's, and what it cannot be is said with the key.
func TestAttachedSources(t *testing.T) {
	m, err := Parse("dir/agentmux.toml", []byte(`
[attached.laptops]
dialect = "claude-code"
unreachable = "ask"
[[api.tokens]]
name = "alice"
token_env = "ALICE_TOKEN"
role = "hook"
[supervisors.s]
strategy = "static"
answers = { approval = "no" }
[[routes]]
host = "laptops"
supervisor = "s"
`))
	if err != nil {
		t.Fatal(err)
	}
	a, h := m.Attached["laptops"], m.Hosts["laptops"]
	if a == nil || h == nil || h.Attached != a {
		t.Fatalf("attached %+v, host %+v; want the source and a host of its name", a, h)
	}
	if a.IdleTimeout.D() != time.Hour || a.MaxSessions != DefaultAttachedMaxSessions || h.Pool != a.MaxSessions ||
		h.QuestionTimeout.D() != DefaultQuestionTimeout || string(h.ApprovalDefaultJSON) != `"no"` || a.Unreachable != UnreachableAsk {
		t.Errorf("defaults: %+v, host %+v", a, h)
	}
	if tok := m.API.Tokens; len(tok) != 1 || tok[0].Name != "alice" || tok[0].Role != APIHook {
		t.Errorf("api tokens: %+v", tok)
	}

	for _, tc := range []struct{ name, src, want string }{
		{"no dialect", "[attached.l]\n", `attached.l (agentmux.toml:1:1): an attached source needs its agents' dialect`},
		{"a host of the same name", "[hosts.l]\ncommand = \"x\"\n[attached.l]\ndialect = \"codex\"\n", `"l" is a host as well`},
		{"unknown dialect", "[attached.l]\ndialect = \"cursor\"\n", `"cursor" is not an attached dialect; use "claude-code" or "codex"`},
		{"unreachable", "[attached.l]\ndialect = \"codex\"\nunreachable = \"allow\"\n", `"allow" is not what a hook does when agentmux cannot decide; use "deny" or "ask"`},
		{"a stage on it", "[attached.l]\ndialect = \"codex\"\n[pipelines.p]\n[[pipelines.p.stages]]\nname = \"a\"\nhost = \"l\"\nprompt = \"x\"\n", `"l" is an attached source`},
		{"a token without its variable", "[attached.l]\ndialect = \"codex\"\n[[api.tokens]]\nname = \"ci\"\nrole = \"operator\"\n", `a token needs token_env`},
		{"a token's role", "[attached.l]\ndialect = \"codex\"\n[[api.tokens]]\nname = \"ci\"\ntoken_env = \"T\"\nrole = \"admin\"\n", `"admin" is not a token role; use "operator" or "viewer" or "hook"`},
		{"a key of neither", "[attached.l]\ndialect = \"codex\"\ncommand = \"x\"\n", `unknown key "command"; known keys here: dialect, question_timeout`},
	} {
		e := parseErr(t, tc.src)
		if !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%s: %v\nwant it to say %q", tc.name, e, tc.want)
		}
	}
}
