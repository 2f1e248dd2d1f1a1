package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// TestShadowSupervisor: a route's shadow, an llm supervisor on a scripted model,
// decides each request beside rule supervisor ops and is never given. While the model
// hangs, the session is answered by ops alone and ends; its shadows are recorded
// without an answer. Once the model answers (it approves everything), its decisions
// are recorded beside ops' answers: it agrees on npm test and disagrees on rm.
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

	// The model hangs: ops answers at once, and the session ends without waiting.
	res := f.run("w", script(approval("a1", "npm test"), approval("a2", "rm -rf build"), result))
	if !res.OK || record(res, "a1").Decider != "rule:ops" || string(record(res, "a2").Value) != `"no"` {
		t.Fatalf("the session while the shadow hangs: %+v", res)
	}
	waitFor(t, 10*time.Second, func() error {
		got := shadows(res.Session)
		if len(got) != 2 || got["a1"].Outcome != "no_answer" || got["a2"].Outcome != "no_answer" || got["a1"].Decider != "reviewer" ||
			!strings.HasPrefix(got["a2"].Reason, `given "no" by rule:ops; no answer from the shadow`) {
			return fmt.Errorf("shadow records %s", show(got))
		}
		return nil
	})
	close(hang)

	// The model answers: each decision is recorded beside ops' answer, while the
	// session waits on a person.
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(approval("b1", "npm test -- --ci"), approval("b2", "rm -rf dist"),
		send(`{"type":"question","id":"q","question":"Done?"}`), await("q"), result), results)
	waitFor(t, 30*time.Second, func() error {
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
	for agreed, want := range map[string]float64{"none": 2, "true": 1, "false": 1} {
		if got := testutil.ToFloat64(f.n.Metrics.Shadow.WithLabelValues("reviewer", agreed)); got != want {
			t.Errorf("agentmux_shadow_decisions_total{supervisor=reviewer,agreed=%s} = %v; want %v", agreed, got, want)
		}
	}
}

func show(v any) string { b, _ := json.Marshal(v); return string(b) }
