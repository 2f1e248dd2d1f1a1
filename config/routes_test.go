package config_test

import (
	"slices"
	"testing"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
)

func TestRouteFirstMatchWins(t *testing.T) {
	m, err := config.Parse("m.toml", []byte(`
[hosts.a]
command = "x"
[hosts.b]
command = "x"
[supervisors.sec]
strategy = "static"
answers = { question = "s" }
[supervisors.qa]
strategy = "static"
answers = { question = "q" }
[supervisors.approver]
strategy = "static"
answers = { approval = "no" }
[supervisors.other]
strategy = "static"
answers = { question = "o" }
[[routes]]
match = "(?i)token"
supervisor = "sec"
[[routes]]
type = "approval"
supervisor = "approver"
[[routes]]
host = "b"
match = "(?i)test"
supervisor = "qa"
[[routes]]
supervisor = "other"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, line, want string }{
		{"a", `{"type":"question","question":"rotate the TOKEN?"}`, "sec"},
		{"a", `{"type":"approval","description":"print token"}`, "sec"},
		{"a", `{"type":"approval","description":"deploy"}`, "approver"},
		{"b", `{"type":"question","question":"run tests?"}`, "qa"},
		{"a", `{"type":"question","question":"run tests?"}`, "other"},
	} {
		msg, err := protocol.Decode([]byte(tc.line), protocol.PlainTextResult)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Routes.Match(tc.host, string(msg.Type), msg.RequestText(), false); got == nil || got.Supervisor != tc.want {
			t.Errorf("Match(%s, %s) = %+v; want %q", tc.host, tc.line, got, tc.want)
		}
	}
	conflict, err := config.Parse("m.toml", []byte(`
[hosts.a]
command = "x"
[supervisors.hold]
strategy = "static"
answers = { approval = "no" }
[supervisors.allow]
strategy = "static"
answers = { approval = "yes" }
[[routes]]
conflict = true
supervisor = "hold"
[[routes]]
supervisor = "allow"
`))
	if err != nil {
		t.Fatal(err)
	}
	if r := conflict.Routes.Match("a", "approval", "Edit x.go", false); r == nil || r.Supervisor != "allow" {
		t.Errorf("a request without a conflict went to %+v; want allow", r)
	}
	if r := conflict.Routes.Match("a", "approval", "Edit x.go", true); r == nil || r.Supervisor != "hold" {
		t.Errorf("a request with a conflict went to %+v; want hold", r)
	}
	if r := config.Routes(nil).Match("a", "question", "", false); r != nil {
		t.Fatal("no routes must match nothing")
	}
}

// TestPromotedShadowDecides: with its shadow promoted, a route is decided by the
// shadow, and shadowed by its old supervisor when that may shadow (not a person's);
// post_process stays only for an llm; routes shadowing another are untouched.
func TestPromotedShadowDecides(t *testing.T) {
	m, err := config.Parse("m.toml", []byte(`
[hosts.a]
command = "x"
[connections.m]
provider = "openai"
base_url = "http://127.0.0.1:1/v1"
default_model = "m"
[supervisors.ops]
strategy = "rule"
rules = [{ match = "^npm", answer = "yes" }]
[supervisors.reviewer]
strategy = "llm"
connection = "m"
[supervisors.script]
strategy = "command"
command = "true"
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "approval"
supervisor = "reviewer"
post_process = true
shadow = "script"
[[routes]]
type = "question"
supervisor = "ops"
shadow = "reviewer"
[[routes]]
supervisor = "oncall"
shadow = "script"
[pipelines.p]
[[pipelines.p.stages]]
name = "build"
host = "a"
prompt = "go"
routes = [{ type = "approval", supervisor = "ops", shadow = "reviewer" }]
`))
	if err != nil {
		t.Fatal(err)
	}
	none := map[string]bool{}
	for i, r := range m.Routes {
		if r.Effective(none) != r || r.Effective(map[string]bool{"ops": true}) != r {
			t.Errorf("routes[%d] changed without its shadow promoted", i)
		}
	}
	script := map[string]bool{"script": true}
	if r := m.Routes[0].Effective(script); r.Supervisor != "script" || r.Shadow != "reviewer" || r.PostProcess || !r.Failover || r.Type != "approval" {
		t.Errorf("routes[0] with script promoted: %+v", r)
	}
	if r := m.Routes[1].Effective(map[string]bool{"reviewer": true}); r.Supervisor != "reviewer" || r.Shadow != "ops" {
		t.Errorf("routes[1] with reviewer promoted: %+v", r)
	}
	if r := m.Routes[2].Effective(script); r.Supervisor != "script" || r.Shadow != "" {
		t.Errorf("routes[2] with script promoted: a person may not shadow: %+v", r)
	}
	if m.Routes[0].Supervisor != "reviewer" || m.Routes[0].Shadow != "script" {
		t.Errorf("the manifest's route changed: %+v", m.Routes[0])
	}
	want := []string{"routes[1]: ops → reviewer", "pipelines.p.stages.build.routes[0]: ops → reviewer"}
	if got := m.Shadowing("reviewer"); !slices.Equal(got, want) {
		t.Errorf("Shadowing(reviewer) = %q; want %q", got, want)
	}
	if got := m.Shadowing("ops"); got != nil {
		t.Errorf("Shadowing(ops) = %q; want none: ops shadows no route", got)
	}
}
