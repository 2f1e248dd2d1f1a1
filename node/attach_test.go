package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

const attachedManifest = `
[attached.laptops]
dialect = "claude-code"
question_timeout = "%s"
idle_timeout = "%s"
max_sessions = 2
[supervisors.policy]
strategy = "rule"
allow = ["Bash(npm test:*)"]
deny = ["Bash(rm:*)"]
[supervisors.people]
strategy = "human"
[[routes]]
host = "laptops"
match = "^Bash: sleepy"
supervisor = "people"
[[routes]]
host = "laptops"
supervisor = "policy"
`

// askAttached puts a Claude Code hook's input to the node as the console does.
func askAttached(t *testing.T, nc *nats.Conn, user, session, event, command string) *wire.AttachReply {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"session_id": session, "cwd": "/home/" + user + "/proj", "hook_event_name": event,
		"tool_name": "Bash", "tool_input": map[string]string{"command": command}, "tool_use_id": "toolu_" + command[:3]})
	req, err := hook.Request(config.AttachedClaudeCode, in, user)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(req)
	msg, err := nc.Request(wire.AttachSubject("laptops"), data, 20*time.Second)
	if err != nil {
		t.Fatalf("attach request: %v", err)
	}
	var r wire.AttachReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// A session agentmux did not start asks through its hooks: each request is routed to
// the supervisors like any other, the session is a session of the source's host with
// its events and audit, and it belongs to the user that opened it.
func TestAttachedSessionsAreSupervised(t *testing.T) {
	f := start(t, fmt.Sprintf(attachedManifest, "30s", "1h"))
	nc := f.n.Bus.Conn
	started := make(chan *nats.Msg, 8)
	sub, err := nc.ChanSubscribe(wire.EventSubject("laptops", "sess-a", "session.started"), started)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	allowed := askAttached(t, nc, "alice", "sess-a", hook.PreToolUse, "npm test -- --watch=false")
	if v := hook.VerdictOf(allowed); v.Decision != hook.Allow || allowed.Session != "sess-a" || allowed.Attempt != 0 {
		t.Fatalf("npm test: %+v → %+v; want it allowed in session sess-a, attempt 0 (the first, as a task's)", allowed, v)
	}
	denied := askAttached(t, nc, "alice", "sess-a", hook.PermissionRequest, "rm -rf build")
	if v := hook.VerdictOf(denied); v.Decision != hook.Deny || !strings.Contains(v.Reason, "Bash(rm:*)") {
		t.Fatalf("rm: %+v → %+v; want it denied naming the rule", denied, v)
	}
	select {
	case m := <-started:
		var ev wire.SessionStarted
		_ = json.Unmarshal(m.Data, &ev)
		if ev.Node != f.n.Name || ev.Attempt != 0 {
			t.Errorf("session.started: %+v; want this node's, attempt 0", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no session.started event for the attached session")
	}

	// Another user's token cannot ask in alice's session.
	if r := askAttached(t, nc, "mallory", "sess-a", hook.PreToolUse, "npm test"); r.Code != wire.AttachForbidden {
		t.Errorf("mallory in alice's session: %+v; want it refused as forbidden", r)
	}
	// max_sessions = 2: a second session opens, a third is refused while both are open.
	if r := askAttached(t, nc, "bob", "sess-b", hook.PreToolUse, "npm test"); hook.VerdictOf(r).Decision != hook.Allow {
		t.Errorf("bob's session: %+v", r)
	}
	if r := askAttached(t, nc, "carol", "sess-c", hook.PreToolUse, "npm test"); r.Code != wire.AttachBusy || !strings.Contains(r.Error, "max_sessions") {
		t.Errorf("a third session: %+v; want it refused as busy, naming max_sessions", r)
	}

	// SessionEnd ends it: ok, with its requests in the audit.
	end, _ := json.Marshal(&wire.AttachRequest{Session: "sess-a", User: "alice", End: true, Event: hook.SessionEnd})
	if _, err := nc.Request(wire.AttachSubject("laptops"), end, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	f.checkAudit("sess-a")
	records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, "sess-a")
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, r := range records {
		if r.Kind == "session.started" && (!strings.Contains(r.Text, "alice") || !strings.Contains(r.Text, "/home/alice/proj")) {
			t.Errorf("the session's start is recorded as %q; want the user and the cwd", r.Text)
		}
		if r.Kind == "answer" {
			answers = append(answers, r.Text+" → "+string(r.Value)+" by "+r.Decider)
		}
		if r.Host != "laptops" {
			t.Errorf("a record of host %q; want laptops", r.Host)
		}
	}
	want := []string{`Bash: npm test -- --watch=false → "yes" by rule:policy`, `Bash: rm -rf build → "no" by rule:policy`}
	if strings.Join(answers, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit's answers:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}

	// Nor can another user open it again once it ended.
	if r := askAttached(t, nc, "mallory", "sess-a", hook.PreToolUse, "npm test"); r.Code != wire.AttachForbidden {
		t.Errorf("mallory reopening alice's ended session: %+v; want it refused as forbidden", r)
	}
	// Its next request opens it again, as attempt 1.
	again := askAttached(t, nc, "alice", "sess-a", hook.PreToolUse, "npm test")
	if again.Attempt != 1 || hook.VerdictOf(again).Decision != hook.Allow {
		t.Errorf("after its end: %+v; want attempt 1, allowed", again)
	}
}

// A request a person answers waits as long as its deadline says, and several wait at
// once; an idle session ends by itself.
func TestAttachedRequestsWaitForPeopleAndIdleSessionsEnd(t *testing.T) {
	f := start(t, fmt.Sprintf(attachedManifest, "2s", "1s"))
	nc := f.n.Bus.Conn
	var wg sync.WaitGroup
	replies := make([]*wire.AttachReply, 3)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = askAttached(t, nc, "alice", "sess-w", hook.PreToolUse, fmt.Sprintf("sleepy %d", i))
		}()
	}
	wg.Wait()
	for i, r := range replies {
		if r.Outcome != "timed_out" || hook.VerdictOf(r).Decision != hook.Deny {
			t.Errorf("request %d nobody answered: %+v; want timed_out, denied", i, r)
		}
	}
	ended := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe(wire.EventSubject("laptops", "sess-w", "session.ended"), ended)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	select {
	case m := <-ended:
		var ev wire.SessionEnded
		_ = json.Unmarshal(m.Data, &ev)
		if ev.Outcome != "ok" || !strings.Contains(string(ev.Result), "no request for 1s") {
			t.Errorf("the idle session ended %s with %s; want ok, saying it was idle", ev.Outcome, ev.Result)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the idle session did not end")
	}
}

// A drain does not wait out its grace for attached sessions, which run nothing between
// their agents' requests: an idle one ends at once, handed over (its next request
// opens it on another node), and the node stops.
func TestDrainHandsIdleAttachedSessionsOver(t *testing.T) {
	f := start(t, fmt.Sprintf(attachedManifest, "30s", "1h"))
	nc := f.n.Bus.Conn
	ended := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe(wire.EventSubject("laptops", "sess-d", "session.ended"), ended)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if r := askAttached(t, nc, "alice", "sess-d", hook.PreToolUse, "npm test"); hook.VerdictOf(r).Decision != hook.Allow {
		t.Fatalf("npm test: %+v", r)
	}
	// The grace is ten minutes; the test's wait, well under it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.n.Drain(ctx, 10*time.Minute, false); err != nil {
		t.Fatalf("the drain waited for an idle attached session: %v", err)
	}
	select {
	case m := <-ended:
		if !strings.Contains(string(m.Data), "its node drains: the session's next request opens it on another node") {
			t.Errorf("the session ended with %s; want it handed over", m.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no session.ended for the attached session")
	}
}
