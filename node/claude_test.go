package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

func TestClaudeCodeBashApprovedRuns(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "hello.txt")
	f := newFakeAnthropic(t,
		[]block{{Text: "I will write the file."}, {Tool: "Bash", Input: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}}},
		[]block{{Text: "Done: the file is written."}},
	)
	n := start(t, claudeHost(t, "claude", f, dir, "")+`
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^Bash: echo ", answer = "yes" }]
[[routes]]
supervisor = "ops"
`)
	res := n.run("claude", "write hi to hello.txt")
	if !res.OK || !strings.Contains(string(res.Payload), `"text":"Done: the file is written."`) {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Fatalf("the approved command did not run: %q %v", b, err)
	}
	if len(res.Requests) != 1 || res.Requests[0].Type != "approval" || res.Requests[0].Decider != "rule:ops" {
		t.Fatalf("requests %+v", res.Requests)
	}
	if !strings.Contains(string(res.Payload), `"partial_output":"I will write the file.Done: the file is written."`) {
		t.Errorf("partials: %s", res.Payload)
	}
	// What the two model calls cost, as Claude Code's result reports it: the scripted
	// API says 100 tokens in and 20 out each; Claude Code prices them itself.
	spend := res.Usage.Spend(func(string, *protocol.Usage) (float64, bool) { return 0, false })
	if spend == nil || spend.InputTokens != 200 || spend.OutputTokens != 40 || spend.CostUSD <= 0 || len(spend.Unpriced) != 0 ||
		len(spend.Models) != 1 || spend.Models[0].PricedBy != wire.PricedByAgent {
		t.Errorf("the session's spend: %+v; want 200 tokens in, 40 out, priced by Claude Code", spend)
	}
	// Counted live too, model message by model message, before the result's totals.
	if lines := testutil.ToFloat64(n.n.Metrics.Messages.WithLabelValues("claude", "usage")); lines < 3 {
		t.Errorf("%v usage lines; want one per model message and the result's total", lines)
	}
}

// claudeManifest is a claude host and agentSupervisors.
func claudeManifest(t *testing.T, f *fakeAnthropic, dir, hostExtra string) string {
	return claudeHost(t, "claude", f, dir, hostExtra) + agentSupervisors
}

func TestClaudeCodeBashDeniedDoesNotRun(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "rm " + victim, "description": "clean up"}}},
		[]block{{Text: "Understood, I will leave it."}},
	)
	n := start(t, claudeManifest(t, f, dir, ""))
	res := n.run("claude", "clean up")
	if !res.OK {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	got, isErr := f.ToolResult(0)
	if !isErr || !strings.Contains(got, `rule 1 matched`) {
		t.Fatalf("the model was told %s (error %v); want the supervisor's reason as an error", got, isErr)
	}
}

func TestClaudeCodeAskUserQuestionAnsweredByARoutedSupervisor(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Tool: "AskUserQuestion", Input: map[string]any{"questions": []any{map[string]any{
			"question": "Which signing algorithm?", "header": "Auth", "multiSelect": false,
			"options": []any{map[string]any{"label": "RS256", "description": "asymmetric"}, map[string]any{"label": "HS256", "description": "shared secret"}},
		}}}}},
		[]block{{Text: "Using RS256."}},
	)
	n := start(t, claudeManifest(t, f, dir, ""))
	res := n.run("claude", "add login")
	if !res.OK {
		t.Fatalf("result %+v", res)
	}
	if len(res.Requests) != 1 || res.Requests[0].Type != "question" || res.Requests[0].Decider != "rule:security" || res.Requests[0].Outcome != "answered" {
		t.Fatalf("requests %+v", res.Requests)
	}
	got, isErr := f.ToolResult(0)
	if isErr || !strings.Contains(got, `Which signing algorithm?`) || !strings.Contains(got, `RS256`) {
		t.Fatalf("the model was told %s (error %v); want the answer", got, isErr)
	}
}

func TestClaudeCodeApprovalTimesOut(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo deploy > prod.txt", "description": "deploy to prod"}}},
		[]block{{Text: "Nobody approved; stopping."}},
	)
	n := start(t, claudeManifest(t, f, dir, `question_timeout = "1s"`))
	res := n.run("claude", "deploy")
	if !res.OK || len(res.Requests) != 1 || res.Requests[0].Outcome != "timed_out" {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("a timed-out approval ran the command")
	}
	got, isErr := f.ToolResult(0)
	if !isErr || !strings.Contains(got, "No answer came within the deadline") {
		t.Fatalf("the model was told %s; want a deny that says nobody answered in time", got)
	}
}

func TestClaudeCodeInterruptMidRun(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}}},
		[]block{{Text: "never reached"}},
	)
	n := start(t, claudeManifest(t, f, dir, `question_timeout = "1m"`))
	interruptAtApproval(t, n, "claude")
}

// interruptAtApproval starts a session of host whose agent asks an approval nobody
// answers, interrupts it there, and checks that the session ends in error with the
// approval cancelled.
func interruptAtApproval(t *testing.T, n *fixture, host string) (why string) {
	t.Helper()
	approvals := make(chan *nats.Msg, 1)
	sub, err := n.n.Bus.Conn.ChanSubscribe(wire.EventSubject(host, "*", "approval"), approvals)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	results := make(chan *agent.Result, 1)
	session := n.n.Submit(host, "", "touch prod", results)
	select {
	case <-approvals:
	case <-time.After(30 * time.Second):
		t.Fatal("no approval request")
	}
	if d := ctl(t, n, "interrupt", session, "operator stop"); !d.OK {
		t.Fatalf("interrupt: %+v", d)
	}
	select {
	case res := <-results:
		if res.OK || len(res.Requests) != 1 || res.Requests[0].Outcome != "cancelled" {
			t.Fatalf("interrupted session ok=%v requests=%+v payload=%s", res.OK, res.Requests, res.Payload)
		}
		t.Logf("interrupted: %s", res.Error)
		return res.Error
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end after the interrupt")
	}
	return ""
}

func TestClaudeCode20ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		// A command with an effect: Claude Code runs read-only ones without asking.
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo ok > concurrent.txt", "description": "check"}}},
		[]block{{Text: "All good."}},
	)
	n := start(t, claudeManifest(t, f, dir, "pool = 20"))
	concurrently(t, n, "claude", 20)
}

// concurrently runs count sessions of host at once; each must end ok with its one
// approval answered.
func concurrently(t *testing.T, n *fixture, host string, count int) {
	t.Helper()
	results := make(chan *agent.Result, count)
	begun := time.Now()
	for range count {
		n.n.Submit(host, "", "check", results)
	}
	for range count {
		select {
		case res := <-results:
			if !res.OK || len(res.Requests) != 1 || res.Requests[0].Outcome != "answered" {
				t.Fatalf("session ok=%v error=%q requests=%+v payload=%s", res.OK, res.Error, res.Requests, res.Payload)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the sessions did not all end")
		}
	}
	t.Logf("%d %s sessions at once in %v", count, host, time.Since(begun))
}

func TestClaudeCodeResumesAConversation(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t, []block{{Text: "Noted: the password is swordfish."}})
	n := start(t, claudeManifest(t, f, dir, ""))
	first := n.run("claude", "remember: the password is swordfish")
	var p struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(first.Payload, &p); err != nil || !first.OK || p.SessionID == "" {
		t.Fatalf("first session %+v %s: the result must carry Claude Code's session_id", first, first.Payload)
	}
	f.Replay([]block{{Text: "It is swordfish."}})
	results := make(chan *agent.Result, 1)
	n.n.SubmitSession("claude", Session{Prompt: "what is the password?", Resume: p.SessionID}, results)
	var res *agent.Result
	select {
	case res = <-results:
	case <-time.After(30 * time.Second):
		m, _ := n.n.Bus.Conn.Request(wire.CtlSubject(n.n.Name, "list"), nil, 5*time.Second)
		t.Fatalf("the resumed session did not end; sessions: %s", m.Data)
	}
	if !res.OK {
		t.Fatalf("resumed session %+v", res)
	}
	conversation := f.LastMessages()
	if !strings.Contains(string(conversation), "remember: the password is swordfish") || !strings.Contains(string(conversation), "what is the password?") {
		t.Fatalf("the resumed conversation lacks the first turn: %.2000s", conversation)
	}
}

// A typed result from Claude Code that does not fit is asked for again in the same
// conversation: the model's next request holds its first answer and the runtime's
// correction, and the second answer is the session's data.
func TestClaudeCodeTypedResultRetriedInTheSameConversation(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Text: "All 12 tests pass."}},
		[]block{{Text: "```json\n{\"passed\": true, \"failures\": []}\n```"}},
	)
	n := start(t, claudeHost(t, "claude", f, dir, `result_schema = { type = "object", required = ["passed"], properties = { passed = { type = "boolean" } } }
result_retries = 1`))
	res := n.run("claude", "run the tests and report")
	if !res.OK || string(res.Data) != `{"passed":true,"failures":[]}` {
		t.Fatalf("result %+v %s; want the second answer as data", res, res.Payload)
	}
	last := f.LastMessages()
	for _, want := range []string{"run the tests and report", "All 12 tests pass.", "does not fit the required JSON Schema", "the result is not JSON"} {
		if !strings.Contains(string(last), want) {
			t.Errorf("the model's second request does not carry %q: %s", want, last)
		}
	}
}

// A rule supervisor with a project's Claude Code permissions (imported as they are)
// answers the real CLI's approvals: an allowed command runs, a denied one does not and
// the model is told which rule denied it, and one no rule covers goes to a person.
func TestClaudeCodePermissionRules(t *testing.T) {
	dir, policy := t.TempDir(), t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Outside the agent's folder, so that the CLI does not apply the rules itself.
	if err := os.MkdirAll(filepath.Join(policy, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	// echo's redirection writes a file: Edit(./**) allows that write in the agent's folder.
	settings := `{"permissions": {"allow": ["Bash(echo:*)", "Read(./**)", "Edit(./**)"], "deny": ["Bash(rm:*)"], "ask": ["Bash(git push:*)"]}}`
	if err := os.WriteFile(filepath.Join(policy, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo hi > " + target, "description": "greet"}},
			{Tool: "Bash", Input: map[string]any{"command": "rm " + victim, "description": "clean up"}},
			{Tool: "Bash", Input: map[string]any{"command": "make deploy", "description": "ship"}}},
		[]block{{Text: "Done."}},
	)
	n := start(t, claudeHost(t, "claude", f, dir, "")+fmt.Sprintf(`
[supervisors.policy]
strategy = "rule"
import = %q
fallback = "oncall"
[supervisors.oncall]
strategy = "static"
answers = { approval = "no" }
[[routes]]
supervisor = "policy"
`, filepath.Join(policy, ".claude", "settings.json")))
	res := n.run("claude", "greet, clean up, ship")
	if !res.OK {
		t.Fatalf("result %+v", res)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Errorf("the allowed command did not run: %q %v", b, err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}
	if got, isErr := f.ToolResult(1); !isErr || !strings.Contains(got, "denied by Bash(rm:*)") {
		t.Errorf("the model was told %s (error %v); want the rule that denied it", got, isErr)
	}
	deciders := map[string]string{}
	for _, r := range res.Requests {
		deciders[r.Text] = r.Decider
	}
	for text, want := range map[string]string{"Bash: echo hi > " + target + " (greet)": "rule:policy", "Bash: rm " + victim + " (clean up)": "rule:policy",
		"Bash: make deploy (ship)": "static:oncall"} {
		if deciders[text] != want {
			t.Errorf("%q decided by %q; want %s (all: %v)", text, deciders[text], want, deciders)
		}
	}
}
