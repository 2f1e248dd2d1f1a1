package config_test

import (
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
