package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const humanSupervisors = `
[supervisors.oncall]
strategy = "human"
[supervisors.gate]
strategy = "rule"
rules = [{ type = "approval", match = ".", answer = "yes" }]
escalate = { to = "oncall", when = "(?i)prod" }
[[routes]]
supervisor = "gate"
`

// waitPending waits for the request of session to wait for a person, and returns it.
func waitPending(t *testing.T, pending *store.PendingStore, session string) *wire.PendingRequest {
	t.Helper()
	var found *wire.PendingRequest
	proctest.Within(t, 10*time.Second, func() (err error) {
		found, err = pendingOf(pending, session)
		return err
	})
	return found
}

// pendingOf is a request of session waiting for a person, or an error saying none is.
func pendingOf(pending *store.PendingStore, session string) (*wire.PendingRequest, error) {
	list, err := pending.List(context.Background())
	if err != nil {
		return nil, err
	}
	for _, p := range list {
		if p.Session == session {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no request of %s is waiting for a person (%d are)", session, len(list))
}

func pendingStore(t *testing.T, f *fixture) *store.PendingStore {
	t.Helper()
	pending, err := store.OpenPending(context.Background(), f.n.Bus.JS, f.n.Bus.Conn)
	if err != nil {
		t.Fatal(err)
	}
	return pending
}

func TestEscalationToAPersonAndFirstAnswerWins(t *testing.T) {
	f := start(t, simHost("w", "question_timeout = \"1m\"")+humanSupervisors)
	pending := pendingStore(t, f)
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(
		send(`{"type":"approval","id":"a1","description":"deploy to staging"}`), await("a1"),
		send(`{"type":"approval","id":"a2","description":"deploy to prod"}`), await("a2"), result), results)

	p := waitPending(t, pending, session)
	if p.Request != "a2" || p.Supervisor != "oncall" || !strings.Contains(p.Escalation, `matches "(?i)prod"`) {
		t.Fatalf("pending %+v", p)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"no"`), Reason: "prod freeze"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "bob", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); !errors.Is(err, store.ErrAlreadyAnswered) || !strings.Contains(err.Error(), "by alice") {
		t.Fatalf("second answer: %v; want already answered by alice", err)
	}
	res := <-results
	got := answers(t, res)
	if string(got["a1"].Value) != `"yes"` || string(got["a2"].Value) != `"no"` || got["a2"].Outcome != "answered" {
		t.Fatalf("answers %+v", got)
	}
	if got["a2"].Reason != "alice: prod freeze" { // the person's reason reaches the agent in the response line
		t.Errorf("a2's reason %q; want alice's, %q", got["a2"].Reason, "alice: prod freeze")
	}
	if r := record(res, "a1"); r.Decider != "rule:gate" {
		t.Errorf("a1 decided by %q; the rule answers what is not escalated", r.Decider)
	}
	if r := record(res, "a2"); r.Decider != "human:alice" {
		t.Errorf("a2 decided by %q", r.Decider)
	}
}

func TestHumanDeadlineGivesTheDefault(t *testing.T) {
	f := start(t, simHost("w", "question_timeout = \"500ms\"")+humanSupervisors)
	pending := pendingStore(t, f)
	// The announcement, not the list: the request may be past its deadline, and gone
	// from the list, before a poll on a busy machine sees it.
	announced, err := f.n.Bus.Conn.SubscribeSync(wire.HumanSubject("*", ">"))
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(send(`{"type":"approval","id":"a1","description":"drop prod table"}`), await("a1"), result), results)
	msg, err := announced.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no request of %s was announced for a person: %v", session, err)
	}
	var p wire.PendingRequest
	if err := json.Unmarshal(msg.Data, &p); err != nil || p.Session != session {
		t.Fatalf("announced %s (%v); want a request of %s", msg.Data, err, session)
	}
	res := <-results
	if r := record(res, "a1"); r.Outcome != "timed_out" || string(answers(t, res)["a1"].Value) != `"no"` {
		t.Fatalf("a1 %+v", r)
	}
	// Refused as past its deadline, or, once the agent's node has withdrawn it, as
	// cancelled with why.
	_, err = pending.Respond(context.Background(), p.ID, "late", wire.RespondRequest{Value: json.RawMessage(`"yes"`)})
	if !errors.Is(err, store.ErrPastDeadline) && !(errors.Is(err, store.ErrCancelled) && strings.Contains(err.Error(), "timed_out: no answer within")) {
		t.Fatalf("answer after the deadline: %v", err)
	}
}

func TestHumanAnswerSurvivesASupervisorRestart(t *testing.T) {
	// Node a runs the agents; the supervisors run on b, then on c, over a's NATS.
	t.Setenv("T_PEER_PASSWORD", nuid.Next())
	a := start(t, simHost("w", "question_timeout = \"1m\"")+humanSupervisors+peerUser, func(o *Options) { o.NoSupervisors = true })
	supervisors := peerOf(a) + simHost("w", "") + humanSupervisors
	b := start(t, supervisors, func(o *Options) { o.NoTasks = true; o.Name = "b" })
	pending := pendingStore(t, a)
	results := make(chan *agent.Result, 1)
	session := a.n.Submit("w", "", script(send(`{"type":"approval","id":"a1","description":"deploy to prod"}`), await("a1"), result), results)
	p := waitPending(t, pending, session)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	start(t, supervisors, func(o *Options) { o.NoTasks = true; o.Name = "c" }) // delivers what b could not
	select {
	case res := <-results:
		if r := record(res, "a1"); r.Decider != "human:alice" || string(answers(t, res)["a1"].Value) != `"yes"` {
			t.Fatalf("a1 %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the answer given while no supervisor ran was never delivered")
	}
}

// An ask permission rule hands the approval to the supervisor's escalation: a person
// sees it with the rule that asked, and their answer reaches the agent.
func TestPermissionAskEscalatesToAPerson(t *testing.T) {
	f := start(t, simHost("w", `question_timeout = "1m"`)+`
[supervisors.policy]
strategy = "rule"
allow = ["Bash(npm test:*)"]
ask = ["Bash(git push:*)"]
escalate = { to = "oncall" }
[supervisors.oncall]
strategy = "human"
[[routes]]
supervisor = "policy"
`)
	pending := pendingStore(t, f)
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(
		send(`{"type":"approval","id":"a1","description":"npm test","tool":"Bash","input":{"command":"npm test"}}`), await("a1"),
		send(`{"type":"approval","id":"a2","description":"git push","tool":"Bash","input":{"command":"git push origin main"}}`), await("a2"), result), results)
	p := waitPending(t, pending, session)
	if p.Request != "a2" || !strings.Contains(p.Escalation, "ask: Bash(git push:*)") {
		t.Fatalf("pending %+v; want a2, escalated by the ask rule", p)
	}
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	res := <-results
	if r := record(res, "a1"); r.Decider != "rule:policy" {
		t.Errorf("a1 decided by %s", r.Decider)
	}
	if r := record(res, "a2"); r.Decider != "human:alice" {
		t.Errorf("a2 decided by %s", r.Decider)
	}
	f.checkAudit(res.Session)
}

// TestASessionCannotBuryPeople: a session that sends people more requests than
// decide.MaxWaitingPerSession at once, or one longer than decide.MaxPersonText, gets the
// default for the rest at once, with why in the audit; the people see no more than the
// cap, and the session goes on when they answer.
func TestASessionCannotBuryPeople(t *testing.T) {
	f := start(t, simHost("w", `question_timeout = "1m"`)+"[supervisors.people]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"people\"\n")
	pending := pendingStore(t, f)
	var steps []string
	for i := range decide.MaxWaitingPerSession + 2 {
		steps = append(steps, send(fmt.Sprintf(`{"type":"approval","id":"a%d","description":"deploy %d"}`, i, i)))
	}
	long, _ := json.Marshal(strings.Repeat("y", decide.MaxPersonText+1))
	steps = append(steps, send(`{"type":"approval","id":"long","description":`+string(long)+`}`), await("*"), result)
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(steps...), results)
	var waiting []*wire.PendingRequest
	proctest.Within(t, 20*time.Second, func() error {
		list, err := pending.List(context.Background())
		if err != nil {
			return err
		}
		waiting = waiting[:0]
		for _, p := range list {
			if p.Session == session {
				waiting = append(waiting, p)
			}
		}
		if len(waiting) != decide.MaxWaitingPerSession {
			return fmt.Errorf("%d requests wait for people; want %d", len(waiting), decide.MaxWaitingPerSession)
		}
		return nil
	})
	for _, p := range waiting {
		if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`)}); err != nil {
			t.Fatal(err)
		}
	}
	res := <-results
	if !res.OK {
		t.Fatalf("session: %+v", res)
	}
	reasons := map[string]string{}
	var records []*wire.AuditRecord
	proctest.Within(t, 10*time.Second, func() error {
		var err error
		if records, err = store.ReadAudit(context.Background(), f.n.Bus.JS, session); err == nil && len(records) < decide.MaxWaitingPerSession+5 {
			err = fmt.Errorf("%d audit records", len(records))
		}
		return err
	})
	for _, r := range records {
		if r.Kind == "answer" {
			reasons[r.Request] = r.Outcome + " " + r.Decider + ": " + r.Reason
		}
	}
	answered, defaulted := 0, 0
	for id, why := range reasons {
		switch {
		case strings.HasPrefix(why, "answered human:alice"):
			answered++
		case id == "long" && strings.Contains(why, "its text is 16385 bytes, over the 16384 a person is shown"):
			defaulted++
		case strings.Contains(why, fmt.Sprintf("already has %d requests waiting for people, the most it may", decide.MaxWaitingPerSession)):
			defaulted++
		default:
			t.Errorf("request %s: %s", id, why)
		}
	}
	if answered != decide.MaxWaitingPerSession || defaulted != 3 {
		t.Fatalf("%d answered by a person and %d defaulted; want %d and 3: %v", answered, defaulted, decide.MaxWaitingPerSession, reasons)
	}
}

// A person's answer for the session is a grant that stands while its session runs:
// listed then, and gone once the session has ended.
func TestSessionGrantGoesWithItsSession(t *testing.T) {
	f := start(t, simHost("w", "question_timeout = \"1m\"")+humanSupervisors)
	pending := pendingStore(t, f)
	results := make(chan *agent.Result, 1)
	session := f.n.Submit("w", "", script(
		send(`{"type":"approval","id":"a1","description":"deploy to prod"}`), await("a1"),
		send(`{"type":"approval","id":"a2","description":"deploy to prod"}`), await("a2"), result), results)
	p := waitPending(t, pending, session)
	if _, err := pending.Respond(context.Background(), p.ID, "alice", wire.RespondRequest{Value: json.RawMessage(`"yes"`), Scope: wire.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	res := <-results
	if r := record(res, "a2"); r.Decider != "session:human:alice" {
		t.Fatalf("a2 decided by %q; want alice's answer for the session", r.Decider)
	}
	proctest.Within(t, 10*time.Second, func() error {
		for _, g := range f.n.standing.grants.Standing(time.Now()) {
			if g.Session == session {
				return fmt.Errorf("the grant of ended session %s is still standing: %+v", session, g)
			}
		}
		return nil
	})
}
