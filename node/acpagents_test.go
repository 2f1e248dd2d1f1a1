package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/agenttest"
)

// scriptedAPI is a scripted model API of the agent CLIs' tests.
type scriptedAPI interface {
	Replay(script ...agenttest.Call)
	Output(n int) string
}

// shell is a call of an agent's shell tool.
func shell(tool, command, description string) agenttest.Call {
	return agenttest.Call{Name: tool, Args: map[string]any{"command": command, "description": description}}
}

// approvedThenDenied runs two sessions of an ACP agent on one process, through its shell
// tool: two echo commands a rule allows both run and each is asked (a "yes" is the
// agent's allow-once, never its allow-always); an rm a rule denies does not run. It
// returns the second session's result for what each agent does after a refusal.
func approvedThenDenied(t *testing.T, n *fixture, host string, f scriptedAPI, tool, dir string) *agent.Result {
	t.Helper()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Replay(shell(tool, "echo hi > "+target, "write a greeting"), shell(tool, "echo again >> "+target, "write more"), agenttest.Call{Text: "Written."})
	res := n.run(host, "write hi")
	if !res.OK {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\nagain\n" {
		t.Fatalf("the approved commands did not run: %q %v", b, err)
	}
	if len(res.Requests) != 2 || res.Requests[0].Type != "approval" || res.Requests[0].Decider != "rule:ops" || res.Requests[1].Decider != "rule:ops" {
		t.Fatalf("requests %+v; want each command asked", res.Requests)
	}
	f.Replay(shell(tool, "rm "+victim, "clean up"), agenttest.Call{Text: "Left it alone."})
	res = n.run(host, "clean up")
	if !res.OK || len(res.Requests) != 1 || string(res.Requests[0].Value) != `"no"` {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	return res
}

// endsTurnAtRefusal checks that the agent ended its turn at the refused call: the
// model was not called again.
func endsTurnAtRefusal(t *testing.T, f scriptedAPI, agentName string) {
	t.Helper()
	if told := f.Output(0); told != "" {
		t.Fatalf("the model was told %s; %s ends the turn at a refusal", told, agentName)
	}
}

// interruptedByItself interrupts a session of host at its approval (of a command
// touching prod, which waits for a supervisor nobody runs): the agent ends the turn
// itself once its open request is answered cancelled, and the command never runs.
func interruptedByItself(t *testing.T, n *fixture, host string, f scriptedAPI, tool, dir string) {
	t.Helper()
	f.Replay(shell(tool, "echo x > prod.txt", "touch prod"), agenttest.Call{Text: "never reached"})
	if why := interruptAtApproval(t, n, host); why != "acp turn ended: cancelled" {
		t.Errorf("the session ended with %q; want the agent's own end of the turn", why)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

// tenAtOnce runs ten sessions of host at once, each with a command a rule allows.
func tenAtOnce(t *testing.T, n *fixture, host string, f scriptedAPI, tool string) {
	t.Helper()
	f.Replay(shell(tool, "echo hi > concurrent.txt", "write"), agenttest.Call{Text: "Done."})
	concurrently(t, n, host, 10)
}
