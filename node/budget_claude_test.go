package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// budgetRoutes send budget requests to a person; they go before the other routes.
const budgetRoutes = `
[supervisors.treasurer]
strategy = "human"
[[routes]]
type = "budget"
supervisor = "treasurer"
`

// raiseThenRefuse answers the session's first budget request "yes" and its second
// "no" as alice, checking what each says, and returns the session's result.
func raiseThenRefuse(t *testing.T, pending *store.PendingStore, session string, results <-chan *agent.Result) *agent.Result {
	t.Helper()
	var asked []string
	for i, value := range []string{`"yes"`, `"no"`} {
		var p *wire.PendingRequest
		proctest.Within(t, time.Minute, func() (err error) {
			// A minute: under load, an agent CLI takes its time to start and to ask.
			if p, err = pendingOf(pending, session); err != nil {
				return err
			}
			if p.Request != fmt.Sprintf("budget-%d", i+1) {
				return fmt.Errorf("waiting for budget-%d; %s waits", i+1, p.Request)
			}
			return nil
		})
		asked = append(asked, p.Text)
		if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(value)}); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasSuffix(asked[0], " tokens of 200; go on with +200 tokens?") || !strings.HasSuffix(asked[1], " tokens of 400; go on with +200 tokens?") {
		t.Errorf("the budget requests asked %q; want the budget of 200 tokens, then 400", asked)
	}
	res := <-results
	if res.OK || !res.BudgetExceeded || !strings.HasSuffix(res.Error, " tokens of 400; human:alice did not raise it") {
		t.Fatalf("result %+v; want budget_exceeded at the raised budget", res)
	}
	var decided []string
	for _, r := range res.Requests {
		if r.Type == protocol.TypeBudget {
			decided = append(decided, r.ID+"="+string(r.Value)+" by "+r.Decider)
		}
	}
	if strings.Join(decided, ", ") != `budget-1="yes" by human:alice, budget-2="no" by human:alice` {
		t.Errorf("the budget requests were decided %v", decided)
	}
	return res
}

// written reports which of files exist in dir.
func written(dir string, files ...string) string {
	var out []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// quietWhilePaused checks, in the session's audit, that nothing of the agent's was
// answered while it was paused: from each pause to its budget's answer, a request is
// held (or withdrawn, cancelled), never decided.
func quietWhilePaused(t *testing.T, f *fixture, session string) {
	t.Helper()
	paused, pauses := false, 0
	for _, r := range sessionAudit(t, f, session) {
		switch {
		case r.Kind == wire.EventSessionPaused:
			paused, pauses = true, pauses+1
		case r.Kind == "answer" && r.Type == "budget":
			paused = false
		case r.Kind == "answer" && paused && r.Outcome != "cancelled":
			t.Errorf("%s (%s) was answered %s by %s while the session was paused", r.Request, r.Text, r.Value, r.Decider)
		}
	}
	if pauses != 2 {
		t.Errorf("the audit has %d pauses; want 2", pauses)
	}
}

// Claude Code at its token budget (the scripted API counts 100 tokens in and up to 20
// out per message) is interrupted at the end of its turn, and nothing it asks is
// answered while it is paused; raised by a person, it goes on in a new turn; at the
// raised budget, refused, its session ends.
func TestClaudeCodeBudgetRaisedThenRefused(t *testing.T) {
	dir := t.TempDir()
	bash := func(file string) []block {
		return []block{{Tool: "Bash", Input: map[string]any{"command": "echo " + file + " > " + filepath.Join(dir, file), "description": "write " + file}}}
	}
	f := newFakeAnthropic(t, bash("one"), bash("two"), bash("two"), bash("three"), []block{{Text: "never"}})
	n := start(t, claudeHost(t, "claude", f, dir, "budget = { tokens = 200 }\nquestion_timeout = \"1m\"")+budgetRoutes+agentSupervisors)
	results := make(chan *agent.Result, 1)
	session := n.n.Submit("claude", "", "write the files", results)
	raiseThenRefuse(t, pendingStore(t, n), session, results)
	quietWhilePaused(t, n, session)
	// Which command ran last depends on where in its turn the interrupt found it.
	if got := written(dir, "one", "two"); got != "one two" {
		t.Errorf("written: %s; want one before the budget, two once it was raised", got)
	}
	if !strings.Contains(string(f.LastMessages()), "Your budget was raised (human:alice). Continue the task where you stopped.") {
		t.Errorf("the conversation did not go on in a new turn: …%s", tail(string(f.LastMessages()), 600))
	}
}

// Codex reports its tokens once a response's items are done: it is paused after the
// command of the response that crossed the budget, at the end of its turn.
//
// Codex runs its commands outside its own sandbox here: under load, its bubblewrap
// now and then failed the first command ("bwrap: setting up uid map: Permission
// denied", exit 1), and "one" was never written though it was approved and run.
// What is tested is the budget, not Codex's sandbox.
func TestCodexBudgetRaisedThenRefused(t *testing.T) {
	dir := t.TempDir()
	exec := func(file string) call { return agenttest.Exec("echo " + file + " > " + filepath.Join(dir, file)) }
	f := newFakeResponses(t, exec("one"), exec("two"), exec("three"), exec("four"), exec("five"), call{Text: "never"})
	// The budget route goes before agentSupervisors' routes, which codexHost ends with.
	n := start(t, codexHost(t, f, dir, "budget = { tokens = 200 }\nquestion_timeout = \"1m\""+budgetRoutes, "-c", `sandbox_mode="danger-full-access"`))
	results := make(chan *agent.Result, 1)
	session := n.n.Submit("codex", "", "write the files", results)
	raiseThenRefuse(t, pendingStore(t, n), session, results)
	quietWhilePaused(t, n, session)
	// Whether two ran depends on where in its turn the interrupt found it.
	if got := written(dir, "one", "three", "five"); got != "one three" {
		t.Errorf("written: %s; want one before the budget, three once it was raised, never five", got)
	}
	if in := f.LastInput(); !strings.Contains(in, "Your budget was raised (human:alice). Continue the task where you stopped.") {
		t.Errorf("the thread did not go on in a new turn: …%s", tail(in, 600))
	}
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// answerBudget waits for session's budget request, checks what it says and answers
// it value as alice.
func answerBudget(t *testing.T, pending *store.PendingStore, session, wantSuffix, value string) {
	t.Helper()
	var p *wire.PendingRequest
	proctest.Within(t, time.Minute, func() error {
		list, err := pending.List(context.Background())
		if err != nil {
			return err
		}
		for _, r := range list {
			if r.Session == session && r.Type == string(protocol.TypeBudget) {
				p = r
				return nil
			}
		}
		return fmt.Errorf("no budget request of %s waits for a person (%d requests do)", session, len(list))
	})
	if !strings.HasSuffix(p.Text, wantSuffix) {
		t.Errorf("the budget request asks %q; want it to end %q", p.Text, wantSuffix)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(value)}); err != nil {
		t.Fatal(err)
	}
}

// An ACP agent (the real claude-agent-acp) at its wall budget, its approval waiting, is
// cancelled (session/cancel) and its turn ends without ending the session; raised by a
// person it goes on in a new prompt of the same ACP session and finishes. Refused, the
// next session ends budget_exceeded. (claude-agent-acp reports its tokens and cost only
// with its turn's end, which ends an ACP session: a token or dollar budget is checked
// then, too late to pause it; README, "Budgets".)
func TestACPBudgetRaisedThenRefused(t *testing.T) {
	dir := t.TempDir()
	bash := func(file string) []block {
		return []block{{Tool: "Bash", Input: map[string]any{"command": "echo " + file + " > " + filepath.Join(dir, file), "description": "write " + file}}}
	}
	// prod-one is routed to nobody, who never answers: the session waits on it until its
	// wall budget. The budget leaves claude-agent-acp time to start and ask first on a
	// busy machine: with 3 s, under load, the pause came before prod-one was asked, and
	// prod-one then waited out its timeout.
	f := newFakeAnthropic(t, bash("prod-one"), bash("two"), []block{{Text: "done"}})
	// Cancelled, claude-agent-acp sometimes still sends prod-one's refusal to the model in
	// the turn it ends: "two" is for the prompt after the raise, never for that request.
	f.Gate(1, "Your budget was raised")
	n := start(t, acpManifest(t, f, dir, "budget = { wall = \"15s\" }\nquestion_timeout = \"1m\""+budgetRoutes))
	pending := pendingStore(t, n)

	results := make(chan *agent.Result, 1)
	session := n.n.Submit("acp", "", "write the files", results)
	answerBudget(t, pending, session, "go on with +15s?", `"yes"`)
	res := <-results
	if !res.OK || res.BudgetExceeded || res.Raises != 1 {
		t.Fatalf("result %+v; want it ok once raised", res)
	}
	if got := written(dir, "prod-one", "two"); got != "two" {
		out, isErr := f.ToolResult(1)
		t.Errorf("written: %s; want two, after the raise, and never prod-one, cancelled at the pause (the model was told of two: %s, error %v)", got, out, isErr)
	}
	if !strings.Contains(string(f.LastMessages()), "Your budget was raised (human:alice). Continue the task where you stopped.") {
		t.Errorf("the conversation did not go on in a new prompt: …%s", tail(string(f.LastMessages()), 600))
	}
	outcomes := map[string]string{}
	for _, r := range res.Requests {
		if r.Type == protocol.TypeApproval {
			outcomes[strings.Fields(r.Text)[1]] = string(r.Outcome) + " " + r.Decider
		}
	}
	if outcomes["prod-one"] != "cancelled runtime" || outcomes["two"] != "answered rule:ops" {
		t.Errorf("the approvals ended %v; want prod-one cancelled at the pause, two approved by ops", outcomes)
	}

	f.Replay(bash("prod-three"), []block{{Text: "never"}})
	session = n.n.Submit("acp", "", "write three", results)
	answerBudget(t, pending, session, "go on with +15s?", `"no"`)
	res = <-results
	if res.OK || !res.BudgetExceeded || !strings.Contains(res.Error, "human:alice did not raise it") {
		t.Fatalf("result %+v; want budget_exceeded", res)
	}
}
