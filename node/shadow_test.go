package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// TestShadowSupervisor: a route's shadow, an llm supervisor on a scripted model,
// decides each request beside rule supervisor ops and is never given. While the model
// hangs, the session is answered by ops alone and ends. Once the model answers (it
// approves everything), its decisions are recorded beside ops' answers, the ended
// session's too: it agrees on npm test and disagrees on rm.
func TestShadowSupervisor(t *testing.T) {
	t.Setenv("AGENTMUX_TEST_MODEL_KEY", "sk-test")
	hang := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-1","choices":[{"index":0,"message":{"role":"assistant","content":"{\"decision\":\"approve\",\"reason\":\"looks fine\",\"risk_level\":\"low\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	t.Cleanup(model.Close)
	t.Cleanup(func() {
		select {
		case <-hang:
		default:
			close(hang)
		}
	})
	f := start(t, simHost("w", `question_timeout = "1m"`)+fakeConnection(model.URL)+`
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^npm test", answer = "yes" }, { type = "approval", match = "^rm ", answer = "no" }]
[supervisors.reviewer]
strategy = "llm"
connection = "fake"
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "approval"
supervisor = "ops"
shadow = "reviewer"
[[routes]]
supervisor = "oncall"
`)
	approval := func(id, cmd string) string {
		return send(fmt.Sprintf(`{"type":"approval","id":%q,"tool":"Bash","input":{"command":%q},"description":%q}`, id, cmd, cmd)) + "," + await(id)
	}
	shadows := func(session string) map[string]*wire.AuditRecord {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		records, err := store.ReadAudit(ctx, f.n.Bus.JS, session)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*wire.AuditRecord{}
		for _, r := range records {
			if r.Kind == "shadow" {
				out[r.Request] = r
			}
		}
		return out
	}

	// The model hangs: ops answers at once, and the session ends without waiting. Its
	// shadow decisions are recorded once the model answers, after the session's end.
	res := f.run("w", script(approval("a1", "npm test"), approval("a2", "rm -rf build"), result))
	if !res.OK || record(res, "a1").Decider != "rule:ops" || string(record(res, "a2").Value) != `"no"` {
		t.Fatalf("the session while the shadow hangs: %+v", res)
	}
	if got := shadows(res.Session); len(got) != 0 {
		t.Fatalf("shadow records while the model hangs: %s", show(got))
	}
	close(hang)
	proctest.Within(t, 10*time.Second, func() error {
		got := shadows(res.Session)
		if len(got) != 2 || got["a1"].Outcome != "agreed" || got["a2"].Outcome != "disagreed" || got["a2"].Decider != "llm:reviewer/fake-1" ||
			got["a2"].Reason != `given "no" by rule:ops` {
			return fmt.Errorf("shadow records of the ended session %s", show(got))
		}
		return nil
	})

	// The model answers: each decision is recorded beside ops' answer, while the
	// session waits on a person.
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(approval("b1", "npm test -- --ci"), approval("b2", "rm -rf dist"),
		send(`{"type":"question","id":"q","question":"Done?"}`), await("q"), result), results)
	proctest.Within(t, 30*time.Second, func() error {
		got := shadows(session)
		if len(got) != 2 {
			return fmt.Errorf("%d shadow records", len(got))
		}
		if b1 := got["b1"]; b1.Outcome != "agreed" || b1.Decider != "llm:reviewer/fake-1" || string(b1.Value) != `"yes"` || b1.Reason != `given "yes" by rule:ops` {
			t.Errorf("b1's shadow: %+v", b1)
		}
		if b2 := got["b2"]; b2.Outcome != "disagreed" || string(b2.Value) != `"yes"` || b2.Reason != `given "no" by rule:ops` || b2.Text != "rm -rf dist" ||
			string(b2.Given) != `"no"` || b2.GivenBy != "rule:ops" {
			t.Errorf("b2's shadow: %+v", b2)
		}
		return nil
	})
	p := waitPending(t, pendingStore(t, f), session)
	if _, err := pendingStore(t, f).Respond(context.Background(), p.ID, "ana", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	if res := <-results; !res.OK || string(record(res, "b2").Value) != `"no"` {
		t.Fatalf("the shadow's answer was given: %+v", res)
	}
	for agreed, want := range map[string]float64{"none": 0, "true": 2, "false": 2} {
		if got := testutil.ToFloat64(f.n.Metrics.Shadow.WithLabelValues("reviewer", agreed)); got != want {
			t.Errorf("agentmux_shadow_decisions_total{supervisor=reviewer,agreed=%s} = %v; want %v", agreed, got, want)
		}
	}
}

func show(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestShadowWithoutAnswerByItsDeadline: a session ends with its shadow's decision still
// to come; the shadow, another process, takes the ask and never answers, so at the
// request's deadline it is recorded without one, and counted so.
func TestShadowWithoutAnswerByItsDeadline(t *testing.T) {
	f := start(t, simHost("w", `question_timeout = "1s"`)+`
[supervisors.ops]
strategy = "static"
answers = { approval = "no" }
[supervisors.outside]
strategy = "external"
[[routes]]
supervisor = "ops"
shadow = "outside"
`)
	asked := make(chan struct{}, 1)
	sub, err := f.n.Bus.Conn.Subscribe(wire.AskSubject("outside"), func(*nats.Msg) { asked <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	res := f.run("w", script(send(`{"type":"approval","id":"a1","tool":"Bash","input":{"command":"ls"},"description":"ls"}`), await("a1"), result))
	if !res.OK || string(record(res, "a1").Value) != `"no"` {
		t.Fatalf("the session: %+v", res)
	}
	<-asked
	if r := awaitRecord(t, f, res.Session, "shadow", ""); r.Outcome != "no_answer" || r.Decider != "outside" ||
		r.Reason != `given "no" by static:ops; no answer from the shadow by its deadline` {
		t.Errorf("the shadow record: %+v", r)
	}
	if got := testutil.ToFloat64(f.n.Metrics.Shadow.WithLabelValues("outside", "none")); got != 1 {
		t.Errorf("agentmux_shadow_decisions_total{supervisor=outside,agreed=none} = %v; want 1", got)
	}
}
