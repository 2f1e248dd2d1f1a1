package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
)

// A request's timeout runs from when its line was read off stdout, not from when the
// actor got to it: a question that waited in a busy actor's mailbox past its timeout
// is answered with its default at once, not a whole timeout later.
func TestARequestTimesOutFromWhenItWasRead(t *testing.T) {
	p := newPuppet()
	l := spawnAgent(t, withInit, p.run)
	p.read(t)
	p.out <- `{"type":"init_ack","capabilities":[]}`
	l.state("idle")
	// Routed to a supervisor nobody runs: the question waits for its timeout.
	l.system.Root.Send(l.agent, &StartSession{Session: "s-1", Prompt: "work", Started: time.Now(), Routes: config.Routes{{Supervisor: "away"}}})
	if typ := p.read(t); typ != "prompt" {
		t.Fatalf("read %q; want the prompt", typ)
	}
	msg, err := protocol.Decode([]byte(`{"type":"question","id":"q1","question":"go on?","timeout_ms":5000}`), protocol.PlainTextResult)
	if err != nil {
		t.Fatal(err)
	}
	// As readStdout sends it, had the actor been busy for the 10 s since.
	l.system.Root.Send(l.agent, &linesRead{lines: []readLine{{msg: msg}}, at: time.Now().Add(-10 * time.Second)})
	select {
	case line := <-p.in:
		var r struct{ ID, Outcome string }
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.ID != "q1" || r.Outcome != string(protocol.OutcomeTimedOut) {
			t.Fatalf("the agent read %s; want q1's default, timed out", line)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a question read 10 s ago with a 5 s timeout was not answered within 3 s")
	}
	p.exit <- nil
	l.sessionEnded()
	l.gone()
}
