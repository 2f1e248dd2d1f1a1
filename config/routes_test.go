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
		if got := m.Routes.Match(tc.host, string(msg.Type), msg.RequestText()); got == nil || got.Supervisor != tc.want {
			t.Errorf("Match(%s, %s) = %+v; want %q", tc.host, tc.line, got, tc.want)
		}
	}
	if r := config.Routes(nil).Match("a", "question", ""); r != nil {
		t.Fatal("no routes must match nothing")
	}
}
