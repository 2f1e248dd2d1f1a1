package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// TestFleetNodesWithSkewedClocks: the supervisor node runs on the machine's clock; the
// wall clock of one agent node is two minutes behind it (so the supervisor's is two
// minutes ahead of that node's), another's one minute ahead (the supervisor's one
// behind). Every question from both is answered by the supervisor, none gets its
// default, and `agentmux nodes` lists all three up. Before asks carried the time left
// (timeout_ms) a supervisor two minutes ahead found every ask past its deadline, and
// before liveness went by the server's time a node one minute behind was listed gone.
func TestFleetNodesWithSkewedClocks(t *testing.T) {
	t.Parallel()
	host := func(name string) string {
		return fmt.Sprintf("[hosts.%s]\ncommand = %q\nargs = [\"sim\"]\nenv = { AGENTMUX_RUNTIME_MAIN = \"1\" }\nquestion_timeout = \"30s\"\n", name, os.Args[0])
	}
	f := startFleet(t, host("behind")+host("ahead")+
		"[supervisors.ok]\nstrategy = \"static\"\nanswers = { question = \"go on\" }\n[[routes]]\nsupervisor = \"ok\"\n")
	_, js := f.conn(t)
	f.node(t, "sup", "--no-hosts")
	skewed := func(name, offset string) *proc {
		cmd := exec.Command(os.Args[0], "up", "-c", f.manifest, "--name", name, "--log", "info", "--no-supervisors", "--hosts", name)
		cmd.Env = []string{clockOffsetEnv + "=" + offset}
		p := startProc(t, cmd)
		until(t, name+" up", p.stderr, "node up")
		until(t, name+"'s clock moved", p.stderr, "this node's wall clock is moved")
		return p
	}
	skewed("behind", "-2m")
	skewed("ahead", "1m")

	script := `{"steps":[{"send":{"type":"question","id":"q1","question":"carry on?"}},{"await":"q1"},{"result":"done"}]}`
	tasks := map[string]string{}
	for _, h := range []string{"behind", "ahead"} {
		for i := range 3 {
			id := fmt.Sprintf("t-%s-%d", h, i)
			tasks[id] = h
			submitTasks(t, js, h, script, id)
		}
	}
	waitEnded(t, js, tasks)
	answered := map[string]wire.AuditRecord{}
	for _, r := range auditRecords(t, js) {
		if r.Kind == "answer" {
			answered[r.Session] = r
		}
	}
	for id, node := range tasks {
		r, ok := answered[id]
		// sup is the only node serving ok.
		if !ok || r.Outcome != "answered" || r.Decider != "static:ok" || r.Node != node {
			t.Errorf("task %s's question: %+v; want answered by static:ok, asked from %s", id, r, node)
		}
	}
	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	checkInvariants(t, js, ids...)
	for _, name := range []string{"sup", "behind", "ahead"} {
		proctest.EventuallyWithin(t, 30*time.Second, name+" listed up", func() bool { return stateOf(t, f, name) == "up" })
	}
}
