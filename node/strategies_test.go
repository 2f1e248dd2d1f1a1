package node

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/wire"
)

// chatServer is a Chat Completions endpoint whose model answers by keyword.
func chatServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var reply string
		switch {
		case strings.Contains(string(body), "Which suite?"):
			reply = `{"answer":"e2e","reason":"checkout changed","risk_level":"low"}`
		case strings.Contains(string(body), "requests approval"):
			reply = `{"decision":"approve","reason":"read-only","risk_level":"low"}`
		default:
			http.Error(w, `{"error":{"message":"unexpected prompt"}}`, http.StatusBadRequest)
			return
		}
		q, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-1","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`, q)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestLLMAndCommandSupervisorsInTheRuntime(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_MODEL_KEY", "sk-test")
	srv := chatServer(t)
	f := start(t, simHost("w", "")+fakeConnection(srv.URL)+`
[supervisors.architect]
strategy = "llm"
connection = "fake"
[supervisors.script]
strategy = "command"
command = "sh"
args = ["-c", "read request; echo '{\"value\":\"from the script\",\"reason\":\"scripted\"}'"]
[[routes]]
match = "(?i)name"
supervisor = "script"
[[routes]]
supervisor = "architect"
[pricing.fake-1]
input_per_mtok = 3
output_per_mtok = 15
`)
	res := f.run("w", script(
		send(`{"type":"question","id":"q1","kind":"select","question":"Which suite?","options":["unit","e2e"]}`), await("q1"),
		send(`{"type":"approval","id":"a1","description":"read the logs"}`), await("a1"),
		send(`{"type":"question","id":"q2","question":"Branch name?"}`), await("q2"), result))
	got := answers(t, res)
	for id, want := range map[string]string{"q1": `"e2e"`, "a1": `"yes"`, "q2": `"from the script"`} {
		if string(got[id].Value) != want || got[id].Outcome != "answered" {
			t.Errorf("%s = %s %s; want %s", id, got[id].Value, got[id].Outcome, want)
		}
	}
	for id, want := range map[string]string{"q1": "llm:architect/fake-1", "a1": "llm:architect/fake-1", "q2": "command:script"} {
		if r := record(res, id); r.Decider != want {
			t.Errorf("%s decided by %q; want %q", id, r.Decider, want)
		}
	}
	if v := testutil.ToFloat64(f.n.Metrics.LLMRequests.WithLabelValues("architect", "ok")); v != 2 {
		t.Errorf("llm requests ok = %v", v)
	}
	if v := testutil.ToFloat64(f.n.Metrics.LLMTokens.WithLabelValues("architect", "input")); v != 200 {
		t.Errorf("llm input tokens = %v", v)
	}
	// Two calls of 100 tokens in and 20 out, at $3 and $15 a million.
	if v := testutil.ToFloat64(f.n.Metrics.LLMCost.WithLabelValues("architect", "fake-1")); math.Abs(v-2*(100*3+20*15)/1e6) > 1e-12 {
		t.Errorf("llm cost = %v; want $0.0012", v)
	}
}

func TestToolsServedOverNATSAndByCommand(t *testing.T) {
	f := start(t, simHost("w", "")+`
[tools.sql]
description = "served by another process"
[tools.upper]
command = "tr"
args = ["a-z", "A-Z"]
[supervisors.s]
strategy = "static"
answers = { question = "unused" }
[[routes]]
supervisor = "s"
`)
	// A tool server in any language: a NATS responder on agentmux.tool.sql.
	sub, err := f.n.Bus.Conn.Subscribe(wire.ToolSubject("sql"), func(m *nats.Msg) {
		var call decide.ToolCall
		if err := json.Unmarshal(m.Data, &call); err != nil {
			t.Errorf("tool call %s: %v", m.Data, err)
		}
		var args struct{ Query string }
		_ = json.Unmarshal(call.Args, &args)
		_ = m.Respond([]byte(fmt.Sprintf(`{"rows":[[1]],"query":%q,"session":%q}`, args.Query, call.Session)))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	res := f.run("w", script(
		send(`{"type":"tool_call","id":"t1","tool":"sql","args":{"query":"select 1"}}`), await("t1"),
		send(`{"type":"tool_call","id":"t2","tool":"upper","args":{"word":"shout"}}`), await("t2"), result))
	got := answers(t, res)
	if want := fmt.Sprintf(`{"rows":[[1]],"query":"select 1","session":%q}`, res.Session); string(got["t1"].Value) != want {
		t.Errorf("t1 = %s; want %s", got["t1"].Value, want)
	}
	if string(got["t2"].Value) != `{"WORD":"SHOUT"}` {
		t.Errorf("t2 = %s", got["t2"].Value)
	}
	if r := record(res, "t1"); r.Decider != "tool:sql" {
		t.Errorf("t1 decided by %q", r.Decider)
	}
}

// TestLLMFaultsFallBackBeforeTheDeadline: a model endpoint that fails (500), throttles
// (429) or hangs leaves each request to the llm supervisor's fallback before its
// deadline, in a real session whose audit keeps the invariants.
func TestLLMFaultsFallBackBeforeTheDeadline(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_MODEL_KEY", "sk-test")
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), "five hundred"):
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		case strings.Contains(string(body), "throttled"):
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
		default:
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	f := start(t, simHost("w", `question_timeout = "3s"`)+fakeConnection(srv.URL)+`
[supervisors.architect]
strategy = "llm"
connection = "fake"
fallback = "safe"
[supervisors.safe]
strategy = "static"
answers = { question = "fallback" }
[[routes]]
supervisor = "architect"
`)
	res := f.run("w", script(
		send(`{"type":"question","id":"q1","question":"five hundred?"}`), await("q1"),
		send(`{"type":"question","id":"q2","question":"throttled?"}`), await("q2"),
		send(`{"type":"question","id":"q3","question":"hanging?"}`), await("q3"), result))
	got := answers(t, res)
	for _, id := range []string{"q1", "q2", "q3"} {
		if string(got[id].Value) != `"fallback"` || got[id].Outcome != "answered" {
			t.Errorf("%s = %s %s; want the fallback's answer, before the deadline", id, got[id].Value, got[id].Outcome)
		}
		if r := record(res, id); r.Decider != "static:safe" {
			t.Errorf("%s decided by %q; want the fallback static:safe", id, r.Decider)
		}
	}
}

// fakeConnection is the manifest's [connections.fake]: the OpenAI-compatible server at
// url (a fake one), its key from AGENTMUX_TEST_MODEL_KEY.
func fakeConnection(url string) string {
	return fmt.Sprintf("\n[connections.fake]\nprovider = \"openai\"\nbase_url = \"%s/v1\"\napi_key_env = \"AGENTMUX_TEST_MODEL_KEY\"\ndefault_model = \"fake-1\"\n", url)
}
