package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/config"
)

const pipelineBase = `
[hosts.coder]
command = "x"
messages = ["progress", "question", "result"]
[hosts.tester]
command = "x"
result_schema = { type = "object", required = ["passed"] }
result_retries = 1
[supervisors.architect]
strategy = "static"
answers = { question = "yes" }
[supervisors.qa]
strategy = "static"
answers = { question = "ok" }
`

const buildAndTest = `
[pipelines.build_and_test]
params = ["spec"]

[[pipelines.build_and_test.stages]]
name = "implement"
host = "coder"
prompt = "Implement: ${spec}"
routes = [{ type = "question", supervisor = "architect" }]

[[pipelines.build_and_test.stages]]
name = "test"
host = "tester"
prompt = "Test: ${implement} (passed before: ${implement.passed}) $${literal}"
routes = [{ type = "question", supervisor = "qa" }]
result_schema = { type = "object", required = ["passed"], properties = { passed = { type = "boolean" } } }
result_retries = 2
`

func TestPipelineLoads(t *testing.T) {
	m, err := config.Parse("m.toml", []byte(pipelineBase+buildAndTest))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Pipelines["build_and_test"]
	if p == nil || len(p.Stages) != 2 || p.Stage("test").Host != "tester" {
		t.Fatalf("pipeline %+v", p)
	}
	impl, test := p.Stage("implement"), p.Stage("test")
	if impl.Result != nil || test.Result == nil || test.Result.Retries != 2 || !strings.Contains(string(test.Result.Schema), `"boolean"`) {
		t.Fatalf("typed results: implement %+v, test %+v", impl.Result, test.Result)
	}
	if r := impl.Routes[0]; r.Supervisor != "architect" || !r.Failover {
		t.Fatalf("stage route %+v", r)
	}
	if h := m.Hosts["tester"]; h.Result == nil || h.Result.Retries != 1 {
		t.Fatalf("host typed result %+v", h.Result)
	}
	got, err := test.Template.Render(map[string]string{"spec": "login"},
		map[string]config.StageOutput{"implement": {Text: "added login.go", Data: []byte(`{"passed":false}`)}})
	if err != nil || got != "Test: added login.go (passed before: false) ${literal}" {
		t.Fatalf("Render = %q, %v", got, err)
	}
	if _, err := test.Template.Render(map[string]string{"spec": "login"}, map[string]config.StageOutput{"implement": {Text: "no data"}}); err == nil ||
		!strings.Contains(err.Error(), "${implement.passed}: the stage's result has no JSON data") {
		t.Fatalf("a field of a stage without data: %v", err)
	}
}

func TestPipelineProblems(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown param", strings.Replace(buildAndTest, "${spec}", "${specs}", 1),
			`${specs} names no param or earlier stage of pipeline "build_and_test"; params: spec`},
		{"later stage", strings.Replace(buildAndTest, "Implement: ${spec}", "Implement: ${test}", 1),
			`${test} names stage "test", which has not run by the time stage "implement" starts`},
		{"itself", strings.Replace(buildAndTest, "Implement: ${spec}", "Implement: ${implement}", 1),
			`${implement} names stage "implement", which has not run by the time stage "implement" starts`},
		{"unclosed", strings.Replace(buildAndTest, "${spec}", "${spec", 1), `is not closed with '}'`},
		{"unknown host", strings.Replace(buildAndTest, `host = "tester"`, `host = "testr"`, 1),
			`pipelines.build_and_test.stages.1.host (m.toml:27:1): no host "testr"; name one of coder, tester`},
		{"unknown supervisor", strings.Replace(buildAndTest, `supervisor = "qa"`, `supervisor = "qb"`, 1),
			`no supervisor "qb"; define [supervisors.qb]`},
		{"host's name", strings.Replace(buildAndTest, "build_and_test", "coder", -1),
			`pipeline "coder" has a host's name`},
		{"undeclared type", strings.Replace(buildAndTest, `{ type = "question", supervisor = "architect" }`, `{ type = "approval", supervisor = "architect" }`, 1),
			`host "coder" does not send approval (its messages are progress, question, result); the route would never match`},
		{"duplicate stage", strings.Replace(buildAndTest, `name = "test"`, `name = "implement"`, 1),
			`"implement" is already a stage of pipeline "build_and_test"`},
		{"stage named as a param", strings.Replace(buildAndTest, `name = "test"`, `name = "spec"`, 1),
			`"spec" is already a param of pipeline "build_and_test"`},
		{"unknown stage key", strings.Replace(buildAndTest, `host = "tester"`, "host = \"tester\"\nretries = 3", 1),
			`unknown key "retries"; known keys here: name, host, prompt, routes, result_schema, result_retries`},
		{"retries without schema", strings.Replace(buildAndTest, `name = "implement"`, "name = \"implement\"\nresult_retries = 2", 1),
			`result_retries needs a result_schema`},
		{"bad schema", strings.Replace(buildAndTest, `required = ["passed"], properties`, `required = "passed", properties`, 1),
			`result_schema (m.toml:30:1): the schema is not a valid JSON Schema: /required: got string, want array`},
		{"schema reaching a file", strings.Replace(buildAndTest, `required = ["passed"], properties`, `"$ref" = "file:///etc/passwd", properties`, 1),
			`result_schema (m.toml:30:1): the schema is not a valid JSON Schema: $ref "file:///etc/passwd" is outside the schema`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("m.toml", []byte(pipelineBase+tc.src))
			var e *config.Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

func TestDeclaredMessages(t *testing.T) {
	src := pipelineBase + `
[[routes]]
host = "coder"
type = "tool_call"
supervisor = "qa"
`
	_, err := config.Parse("m.toml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `routes.0.type (m.toml:18:1): host "coder" does not send tool_call`) {
		t.Fatalf("a route for an undeclared type: %v", err)
	}
	_, err = config.Parse("m.toml", []byte(strings.Replace(pipelineBase, `"progress", "question"`, `"progress", "questions"`, 1)))
	if err == nil || !strings.Contains(err.Error(), `"questions" is not a message type`) {
		t.Fatalf("an unknown type: %v", err)
	}
	m, err := config.Parse("m.toml", []byte(pipelineBase))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Hosts["coder"]
	if !c.Sends("question") || c.Sends("approval") || !c.Sends("error") || !m.Hosts["tester"].Sends("approval") {
		t.Fatal("Sends: declared types, result and error always, everything without a declaration")
	}
}

func TestTemplateParsing(t *testing.T) {
	for _, tc := range []struct{ src, want, err string }{
		{"plain", "plain", ""},
		{"a ${x} b ${y.z.w}", "a X b deep", ""},
		{"$${x} costs $5", "${x} costs $5", ""},
		{"${x", "", "is not closed"},
		{"${x y}", "", "is not a reference"},
		{"${}", "", "is not a reference"},
	} {
		tpl, err := config.ParseTemplate(tc.src)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTemplate(%q) = %v; want %q", tc.src, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseTemplate(%q): %v", tc.src, err)
		}
		got, err := tpl.Render(map[string]string{"x": "X"}, map[string]config.StageOutput{"y": {Data: []byte(`{"z":{"w":"deep"}}`)}})
		if err != nil || got != tc.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tc.src, got, err, tc.want)
		}
	}
}

func TestNotifyProblems(t *testing.T) {
	base := "[hosts.w]\ncommand = \"x\"\n[notify.n]\n"
	for _, tc := range []struct{ src, want string }{
		{`webhook = "ftp://x"` + "\nevents = [\"session.ended\"]\nformat = \"slack\"", `is not a webhook URL`},
		{`webhook = "https://h.example/x"` + "\nevents = [\"session.end\"]\nformat = \"slack\"", `"session.end" is not an event to notify of; use human.pending, session.started`},
		{`webhook = "https://h.example/x"` + "\nevents = [\"session.ended\"]", `a json notify is signed (Standard Webhooks): set secret_env`},
		{`webhook = "https://h.example/x"` + "\nevents = [\"session.ended\"]\nformat = \"xml\"", `"xml" is not a format; use "json" or "slack"`},
		{`webhook = "https://h.example/x"` + "\nevents = [\"session.ended\"]\nformat = \"slack\"\nretry_for = 0", `0 would never retry`},
		{`webhook = "https://h.example/x"` + "\nevents = [\"session.ended\"]\nformat = \"slack\"\nretries = 3", `unknown key "retries"; known keys here: webhook, events`},
	} {
		_, err := config.Parse("m.toml", []byte(base+tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\ngot %v\nwant %q", tc.src, err, tc.want)
		}
	}
	m, err := config.Parse("m.toml", []byte(base+"webhook = \"https://h.example/x\"\nevents = [\"human.pending\"]\nsecret_env = \"S\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Notify["n"]; n.Format != "json" || n.Timeout.D() != config.DefaultNotifyTimeout || n.RetryFor.D() != config.DefaultNotifyRetryFor {
		t.Fatalf("defaults %+v", n)
	}
}
