package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// runPipeline runs a pipeline on the fixture's node and waits for it to end.
func (f *fixture) runPipeline(name string, params map[string]string) *wire.PipelineRun {
	f.t.Helper()
	_, reply := f.n.RunPipeline(name, "", params)
	select {
	case run := <-reply:
		for _, st := range run.Stages {
			if st.Session != "" {
				f.checkAudit(st.Session)
			}
		}
		return run
	case <-time.After(60 * time.Second):
		f.t.Fatal("the pipeline run did not end")
		return nil
	}
}

// A two-stage pipeline: the second stage's prompt is built from the first stage's
// result, each stage's question goes to its own supervisor, the second stage's result
// is typed, and events and audit records name the pipeline and the stage.
func TestPipelineStagesChainAndHaveTheirOwnSupervisors(t *testing.T) {
	f := start(t, simHost("coder", `messages = ["progress", "question", "result"]`)+simHost("tester", "")+`
[supervisors.architect]
strategy = "static"
answers = { question = "use the session store" }
[supervisors.qa]
strategy = "static"
answers = { question = "run the e2e suite" }
[supervisors.everyone]
strategy = "static"
answers = { question = "the manifest's route" }
[[routes]]
supervisor = "everyone"

[pipelines.build_and_test]
params = ["spec"]

[[pipelines.build_and_test.stages]]
name = "implement"
host = "coder"
prompt = '{"steps":[{"send":{"type":"question","id":"q","question":"How to build ${spec}?"}},{"await":"q"},{"result":"built ${spec}"}]}'
routes = [{ type = "question", supervisor = "architect" }]

[[pipelines.build_and_test.stages]]
name = "test"
host = "tester"
prompt = '{"steps":[{"send":{"type":"question","id":"q","question":"How to test ${implement}?"}},{"await":"q"},{"result":"{\"passed\": true, \"tested\": \"${implement}\"}"}]}'
routes = [{ type = "question", supervisor = "qa" }]
result_schema = { type = "object", required = ["passed"], properties = { passed = { type = "boolean" } } }
`)
	var mu sync.Mutex
	var events []string
	sub, err := f.n.Bus.Conn.Subscribe("agentmux.evt.build_and_test.>", func(m *nats.Msg) {
		mu.Lock()
		events = append(events, m.Subject[strings.LastIndex(m.Subject, ".pipeline.")+1:])
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	run := f.runPipeline("build_and_test", map[string]string{"spec": "the login page"})
	if run.Outcome != "ok" || len(run.Stages) != 2 {
		t.Fatalf("run %+v", run)
	}
	impl, test := run.Stages[0], run.Stages[1]
	if impl.Outcome != "ok" || impl.Text != "built the login page" || impl.Attempts != 1 || impl.Session != run.ID+"-implement" {
		t.Errorf("implement stage %+v", impl)
	}
	if test.Outcome != "ok" || string(test.Data) != `{"passed":true,"tested":"built the login page"}` {
		t.Errorf("test stage %+v; want the typed result built from the first stage's text", test)
	}
	for _, c := range []struct{ session, stage, decider string }{
		{impl.Session, "implement", "static:architect"},
		{test.Session, "test", "static:qa"},
	} {
		records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, c.session)
		if err != nil {
			t.Fatal(err)
		}
		answered := false
		for _, r := range records {
			if r.Pipeline != "build_and_test" || r.Stage != c.stage {
				t.Errorf("%s record %+v does not name its pipeline and stage", r.Kind, r)
			}
			answered = answered || r.Kind == "answer" && r.Decider == c.decider
		}
		if !answered {
			t.Errorf("stage %s: no answer by %s in %d audit records", c.stage, c.decider, len(records))
		}
	}
	proctest.Within(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		want := "pipeline.stage.started pipeline.stage.ended pipeline.stage.started pipeline.stage.ended pipeline.ended"
		if got := strings.Join(events, " "); got != want {
			return fmt.Errorf("events %q; want %q", got, want)
		}
		return nil
	})
	if v := testutil.ToFloat64(f.n.Metrics.Pipelines.WithLabelValues("build_and_test", "ok")); v != 1 {
		t.Errorf("pipelines_total ok = %v", v)
	}
}

// A stage that fails ends the run in error, and the next stage never starts.
func TestPipelineStopsAtAFailedStage(t *testing.T) {
	f := start(t, simHost("w", "")+`
[pipelines.two]
[[pipelines.two.stages]]
name = "first"
host = "w"
prompt = '{"steps":[{"error":"the build broke"}]}'
[[pipelines.two.stages]]
name = "second"
host = "w"
prompt = "${first}"
`)
	run := f.runPipeline("two", nil)
	if run.Outcome != "error" || !strings.Contains(run.Error, `stage "first" failed: the build broke`) ||
		run.Stages[0].Outcome != "error" || run.Stages[1].Outcome != "pending" {
		t.Fatalf("run %+v %+v %+v", run, run.Stages[0], run.Stages[1])
	}
}

// A typed result that does not fit gets a new prompt on the same process saying what
// was wrong; one that never fits ends the session in error after the retries.
func TestTypedResultRetries(t *testing.T) {
	f := start(t, simHost("typed", `result_schema = { type = "object", required = ["passed"] }
result_retries = 2`))
	res := f.run("typed", `{"steps":[{"result":"all good"}],"retry":[[{"result":"{\"pass\": true}"}],[{"result":"`+"```json\\n{\\\"passed\\\": true}\\n```"+`"}]]}`)
	if !res.OK || string(res.Data) != `{"passed":true}` {
		t.Fatalf("result %+v %s; want the second new prompt's fenced JSON", res, res.Payload)
	}
	var payload struct {
		SchemaErrors  []string `json:"schema_errors"`
		SessionNumber int      `json:"session_number"`
	}
	if err := json.Unmarshal(res.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if len(payload.SchemaErrors) != 2 || !strings.Contains(payload.SchemaErrors[0], "the result is not JSON") ||
		!strings.Contains(payload.SchemaErrors[1], `$: missing property 'passed'`) || payload.SessionNumber != 1 {
		t.Fatalf("the agent saw %+v; want two schema errors in its one session", payload)
	}
	res = f.run("typed", `{"steps":[{"result":"nope"}],"retry":[[{"result":"still nope"}]]}`)
	if res.OK || !strings.Contains(res.Error, "the result does not fit the schema after 2 new prompts: the result is not JSON") {
		t.Fatalf("result %+v; want an error after the retries", res)
	}
	if v := testutil.ToFloat64(f.n.Metrics.ResultChecks.WithLabelValues("typed", "reprompted")); v != 4 {
		t.Errorf("reprompted = %v; want 4", v)
	}
}

// A retry is told of the failed attempt, and a question the failed attempt had
// answered is answered again at once from that answer, audited as a replay.
func TestRetryReplaysEarlierAnswers(t *testing.T) {
	f := start(t, simHost("w", "retries = 1")+`
[supervisors.people]
strategy = "external"
[[routes]]
supervisor = "people"
`)
	var asked atomic.Int32
	answerer(t, f.n.Bus.Conn, "people", func(ask *wire.Ask, m *nats.Msg) {
		asked.Add(1)
		reply(t, m, `"blue"`)
	})
	res := f.run("w", script(send(`{"type":"question","id":"q","question":"Which colour?"}`), await("q"),
		`{"exit_first_attempt":3}`, result))
	if !res.OK || res.Attempt != 1 {
		t.Fatalf("result %+v; want the retry to succeed", res)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the supervisor was asked %d times; want once, the retry replaying its answer", n)
	}
	got := answers(t, res)
	if string(got["q"].Value) != `"blue"` {
		t.Errorf("q = %s on the retry", got["q"].Value)
	}
	if r := record(res, "q"); r.Decider != "replay:external:people" {
		t.Errorf("q decided by %q on the retry; want replay:external:people", r.Decider)
	}
	var payload struct {
		Previous struct {
			Attempt  int    `json:"attempt"`
			Error    string `json:"error"`
			Requests []struct {
				Text, Decider string
				Value         json.RawMessage
			} `json:"requests"`
		} `json:"previous_attempt"`
	}
	if err := json.Unmarshal(res.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	p := payload.Previous
	if p.Attempt != 0 || !strings.Contains(p.Error, "exit status 3") || len(p.Requests) != 1 ||
		p.Requests[0].Text != "Which colour?" || string(p.Requests[0].Value) != `"blue"` || p.Requests[0].Decider != "external:people" {
		t.Errorf("previous_attempt %+v", p)
	}
}

// A host that declares its messages: an undeclared progress is a listen:unhandled
// event, an undeclared question is answered at once, invalid, with its default; both
// are counted.
func TestUndeclaredMessagesAreUnhandled(t *testing.T) {
	f := start(t, simHost("w", `messages = ["log", "result"]
question_default = "skip"`)+`
[supervisors.s]
strategy = "static"
answers = { question = "routed" }
[[routes]]
supervisor = "s"
`)
	var unhandled atomic.Int32
	sub, err := f.n.Bus.Conn.Subscribe("agentmux.evt.w.*.listen:unhandled", func(*nats.Msg) { unhandled.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.n.Bus.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	res := f.run("w", script(send(`{"type":"progress","message":"50%"}`), send(`{"type":"log","level":"info","message":"ok"}`),
		send(`{"type":"question","id":"q","question":"Which?"}`), await("q"), result))
	got := answers(t, res)
	if !res.OK || string(got["q"].Value) != `"skip"` || got["q"].Outcome != "invalid" {
		t.Fatalf("q = %s %s; want the default, invalid", got["q"].Value, got["q"].Outcome)
	}
	if v := testutil.ToFloat64(f.n.Metrics.Unhandled.WithLabelValues("w")); v != 2 {
		t.Errorf("unhandled_messages_total = %v; want 2", v)
	}
	proctest.Within(t, 5*time.Second, func() error {
		if n := unhandled.Load(); n != 2 {
			return fmt.Errorf("%d listen:unhandled events; want 2", n)
		}
		return nil
	})
}

// An answer for the session (a rule's scope, or "yes for session") answers the same
// request later in the same session at once, decided by session:<who>; another request,
// or the same one in another session, is asked again.
func TestAnswersThatStandForTheSession(t *testing.T) {
	f := start(t, simHost("w", "")+`
[supervisors.builder]
strategy = "rule"
rules = [
  { type = "approval", match = "^npm test$", answer = "yes", scope = "session" },
  { type = "approval", match = ".", answer = "no" },
]
[supervisors.people]
strategy = "external"
[[routes]]
match = "deploy"
supervisor = "people"
[[routes]]
supervisor = "builder"
`)
	var asked atomic.Int32
	answerer(t, f.n.Bus.Conn, "people", func(ask *wire.Ask, m *nats.Msg) {
		asked.Add(1)
		reply(t, m, `"yes for session"`)
	})
	approve := func(id, text string) string {
		return send(fmt.Sprintf(`{"type":"approval","id":%q,"description":%q}`, id, text)) + "," + await(id)
	}
	script := script(approve("a1", "npm test"), approve("a2", "npm test"), approve("a3", "npm run lint"),
		approve("d1", "deploy staging"), approve("d2", "deploy staging"), result)
	res := f.run("w", script)
	for id, want := range map[string]string{"a1": "rule:builder", "a2": "session:rule:builder", "a3": "rule:builder",
		"d1": "external:people", "d2": "session:external:people"} {
		if r := record(res, id); r.Decider != want {
			t.Errorf("%s decided by %s; want %s", id, r.Decider, want)
		}
	}
	got := answers(t, res)
	if string(got["a2"].Value) != `"yes"` || string(got["a3"].Value) != `"no"` || string(got["d1"].Value) != `"yes"` || string(got["d2"].Value) != `"yes"` {
		t.Errorf("answers %+v", got)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("people were asked %d times; want once, the session's second deploy answered by the standing answer", n)
	}
	res = f.run("w", script)
	if r := record(res, "a2"); r.Decider != "session:rule:builder" || record(res, "a1").Decider != "rule:builder" {
		t.Errorf("the next session: a1 by %s, a2 by %s; want the rule asked again, then standing", record(res, "a1").Decider, r.Decider)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("people were asked %d times over two sessions; want twice", n)
	}
}
