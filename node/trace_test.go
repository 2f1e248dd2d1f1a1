package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

// spanNamed is the one ended span named name, failing the test without exactly one.
func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q; want 1 (spans: %v)", len(found), name, names)
	}
	return found[0]
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestOneQuestionIsOneTraceAcrossNodes: a question asked on one node and decided by an
// llm supervisor on another is one trace: the session's span, the request's as its
// child, the decision's on the other node as the request's child (its context crossed
// the bus in the ask's headers), and the model call's under it, as OpenTelemetry's GenAI
// conventions name it.
func TestOneQuestionIsOneTraceAcrossNodes(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_MODEL_KEY", "sk-test")
	model := agenttest.ChatAnswer(t, `{"answer":"Postgres","reason":"it runs already","risk_level":"low"}`)
	supervisors := fakeConnection(model) + `
[supervisors.architect]
strategy = "llm"
connection = "fake"
[[routes]]
supervisor = "architect"
`
	t.Setenv("T_PEER_PASSWORD", nuid.Next())
	onA, onB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	a := start(t, simHost("w", "")+supervisors+peerUser, func(o *Options) {
		o.NoSupervisors, o.Tracing = true, tracing.New(onA, "agentmux", "node-a")
	})
	start(t, peerOf(a)+simHost("w", "")+supervisors, func(o *Options) {
		o.NoHosts, o.Ephemeral, o.Name, o.Tracing = true, false, "node-b", tracing.New(onB, "agentmux", "node-b")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.n.Run(ctx, "w", "s-traced", script(send(`{"type":"question","id":"q1","question":"Which database?"}`), await("q1"), result))
	if err != nil || !res.OK || record(res, "q1").Decider != "llm:architect/fake-1" {
		t.Fatalf("%+v %v", res, err)
	}
	proctest.Within(t, 10*time.Second, func() error { // B ends its spans as it answers; A's session ends after
		if len(onA.Ended()) < 2 || len(onB.Ended()) < 2 {
			return fmt.Errorf("%d spans ended on A, %d on B", len(onA.Ended()), len(onB.Ended()))
		}
		return nil
	})
	session, request := spanNamed(t, onA, "session w"), spanNamed(t, onA, "request question")
	decision, chat := spanNamed(t, onB, "decide architect"), spanNamed(t, onB, "chat fake-1")
	trace := session.SpanContext().TraceID()
	for _, s := range []sdktrace.ReadOnlySpan{request, decision, chat} {
		if s.SpanContext().TraceID() != trace {
			t.Errorf("%s is in trace %s; want the session's %s", s.Name(), s.SpanContext().TraceID(), trace)
		}
	}
	for _, link := range []struct{ child, parent sdktrace.ReadOnlySpan }{{request, session}, {decision, request}, {chat, decision}} {
		if link.child.Parent().SpanID() != link.parent.SpanContext().SpanID() {
			t.Errorf("%s's parent is %s; want %s", link.child.Name(), link.child.Parent().SpanID(), link.parent.Name())
		}
	}
	if session.Parent().IsValid() || attr(session, "agentmux.session").AsString() != "s-traced" || attr(session, "agentmux.outcome").AsString() != "ok" {
		t.Errorf("the session's span: parent %v, attributes %v", session.Parent(), session.Attributes())
	}
	if attr(request, "agentmux.request").AsString() != "q1" || attr(request, "agentmux.decider").AsString() != "llm:architect/fake-1" || attr(request, "agentmux.outcome").AsString() != "answered" {
		t.Errorf("the request's span: %v", request.Attributes())
	}
	if attr(decision, "agentmux.node").AsString() != "node-b" || !decision.Parent().IsRemote() {
		t.Errorf("the decision's span: remote parent %v, attributes %v", decision.Parent().IsRemote(), decision.Attributes())
	}
	if attr(chat, "gen_ai.operation.name").AsString() != "chat" || attr(chat, "gen_ai.request.model").AsString() != "fake-1" ||
		attr(chat, "gen_ai.usage.input_tokens").AsInt64() != 10 || attr(chat, "gen_ai.usage.output_tokens").AsInt64() != 5 {
		t.Errorf("the model call's span: %v", chat.Attributes())
	}
}

// A pipeline run is a trace: the run's span, a span per stage under it, and each
// stage's session under its stage.
func TestPipelineRunIsOneTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	f := start(t, simHost("w", "")+`
[pipelines.two]
[[pipelines.two.stages]]
name = "a"
host = "w"
prompt = '{"steps":[{"result":"a"}]}'
[[pipelines.two.stages]]
name = "b"
host = "w"
prompt = '{"steps":[{"result":"b ${a}"}]}'
`, func(o *Options) { o.Tracing = tracing.New(rec, "agentmux", "test") })
	run := f.runPipeline("two", nil)
	if run.Outcome != "ok" {
		t.Fatalf("run %+v", run)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if n := len(rec.Ended()); n < 5 {
			return fmt.Errorf("%d spans ended; want the run's, two stages' and two sessions'", n)
		}
		return nil
	})
	pipeline, a, b := spanNamed(t, rec, "pipeline two"), spanNamed(t, rec, "stage a"), spanNamed(t, rec, "stage b")
	var sessions []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "session w" {
			sessions = append(sessions, s)
		}
	}
	if pipeline.Parent().IsValid() || attr(pipeline, "agentmux.run").AsString() != run.ID || attr(pipeline, "agentmux.outcome").AsString() != "ok" {
		t.Errorf("the run's span: parent %v, %v", pipeline.Parent(), pipeline.Attributes())
	}
	for _, st := range []sdktrace.ReadOnlySpan{a, b} {
		if st.Parent().SpanID() != pipeline.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the run's span", st.Name())
		}
	}
	if len(sessions) != 2 {
		t.Fatalf("%d session spans; want 2", len(sessions))
	}
	for _, s := range sessions {
		stage := attr(s, "agentmux.stage").AsString()
		want := map[string]sdktrace.ReadOnlySpan{"a": a, "b": b}[stage]
		if want == nil || s.Parent().SpanID() != want.SpanContext().SpanID() || s.SpanContext().TraceID() != pipeline.SpanContext().TraceID() {
			t.Errorf("the session of stage %q is not its stage's child in the run's trace", stage)
		}
	}
}

// A log line about a session carries the trace and span ids of its span.
func TestLogLinesAboutASessionJoinItsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	var out proctest.Buffer
	f := start(t, budgetHost(`{ tokens = 100 }`, ""), func(o *Options) {
		o.Tracing = tracing.New(rec, "agentmux", "test")
		o.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	res := f.run("w", script(send(`{"type":"usage","model":"m","input_tokens":150,"output_tokens":1}`), `{"await_resume":true}`, result))
	if !res.BudgetExceeded {
		t.Fatalf("result %+v", res)
	}
	session := spanNamed(t, rec, "session w")
	found := false
	for _, l := range strings.Split(out.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "session paused at its budget" {
			continue
		}
		found = true
		if m["trace_id"] != session.SpanContext().TraceID().String() || m["span_id"] != session.SpanContext().SpanID().String() || m["session"] != res.Session {
			t.Errorf("the log line %s; want the session span's trace %s and span %s", l, session.SpanContext().TraceID(), session.SpanContext().SpanID())
		}
	}
	if !found {
		t.Fatalf("no log line says the session paused:\n%s", out.String())
	}
}

// tellTrace is an agent that answers its prompt with the trace context it was given:
// the prompt line's traceparent (the native protocol) and its TRACEPARENT. As Claude
// Code (dialect claude-code) it reads a user message and writes a stream-json result.
const tellTrace = `import json, os, sys
for line in sys.stdin:
    prompt = json.loads(line)
    seen = json.dumps({"prompt": prompt.get("traceparent", ""), "env": os.environ.get("TRACEPARENT", "")})
    if prompt.get("type") == "user":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": seen, "session_id": "c1", "num_turns": 1}), flush=True)
    else:
        print(json.dumps({"type": "result", "text": seen}), flush=True)
`

// TestAgentsJoinTheSessionsTrace: an agent is given its session span's W3C context:
// a process started for the session (Claude Code's) in TRACEPARENT, so its own spans
// (Claude Code's claude_code.interaction) are the session's children; a native agent
// in its prompt line, since its process was started before the session. A task queued
// with a traceparent header (agentmux submit under TRACEPARENT, the API's traceparent)
// has its session's span as that span's child, in the client's trace.
func TestAgentsJoinTheSessionsTrace(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01") // the node's own: never an agent's
	rec := tracetest.NewSpanRecorder()
	claude := filepath.Join(t.TempDir(), "claude") // Claude Code's flags come first: a program of its own
	if err := os.WriteFile(claude, []byte("#!/usr/bin/env python3\n"+tellTrace), 0o755); err != nil {
		t.Fatal(err)
	}
	f := start(t, fmt.Sprintf("[hosts.native]\ncommand = \"python3\"\nargs = [\"-c\", %q]\n[hosts.claude]\ncommand = %q\ndialect = \"claude-code\"\n", tellTrace, claude),
		func(o *Options) { o.Tracing = tracing.New(rec, "agentmux", "test") })
	seen := func(res *agent.Result) (prompt, env string) {
		t.Helper()
		text := res.Text
		var s struct{ Prompt, Env string }
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			t.Fatalf("the agent said %q (%+v): %v", text, res, err)
		}
		return s.Prompt, s.Env
	}
	traceparent := func(s sdktrace.ReadOnlySpan) string {
		return "00-" + s.SpanContext().TraceID().String() + "-" + s.SpanContext().SpanID().String() + "-01"
	}
	sessionSpan := func(session string) sdktrace.ReadOnlySpan {
		t.Helper()
		var found sdktrace.ReadOnlySpan
		proctest.Within(t, 10*time.Second, func() error {
			for _, s := range rec.Ended() {
				if attr(s, "agentmux.session").AsString() == session && strings.HasPrefix(s.Name(), "session ") {
					found = s
					return nil
				}
			}
			var all []string
			for _, s := range rec.Ended() {
				all = append(all, s.Name()+":"+attr(s, "agentmux.session").AsString())
			}
			return fmt.Errorf("no span of session %s ended (ended: %v)", session, all)
		})
		return found
	}

	res := f.run("claude", "what were you given?")
	if prompt, env := seen(res); env != traceparent(sessionSpan(res.Session)) || prompt != "" {
		t.Errorf("Claude Code's process was given TRACEPARENT %q (prompt %q); want its session's span, %s", env, prompt, traceparent(sessionSpan(res.Session)))
	}
	res = f.run("native", "what were you given?")
	if prompt, env := seen(res); prompt != traceparent(sessionSpan(res.Session)) || env != "" {
		t.Errorf("the native agent's prompt carried traceparent %q, its environment %q; want the prompt to carry its session's span, %s, and no TRACEPARENT",
			prompt, env, traceparent(sessionSpan(res.Session)))
	}

	client := tracing.Carried("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "client=1")
	if client == nil {
		t.Fatal("tracing.Carried refused a valid traceparent")
	}
	if tracing.Carried("00-not-a-trace-01", "") != nil || tracing.Carried("", "x=1") != nil {
		t.Error("tracing.Carried took an invalid traceparent")
	}
	data, _ := json.Marshal(&wire.Task{ID: "t-traced", Host: "native", Prompt: "go"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.n.Bus.JS.PublishMsg(ctx, &nats.Msg{Subject: wire.TaskSubject("native"), Data: data, Header: client}, jetstream.WithMsgID("t-traced")); err != nil {
		t.Fatal(err)
	}
	queued := sessionSpan("t-traced")
	if queued.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || queued.Parent().SpanID().String() != "00f067aa0ba902b7" || !queued.Parent().IsRemote() ||
		queued.SpanContext().TraceState().Get("client") != "1" {
		t.Errorf("the queued task's session span is in trace %s under %s (tracestate %q); want the client's trace and span",
			queued.SpanContext().TraceID(), queued.Parent().SpanID(), queued.SpanContext().TraceState())
	}
}
