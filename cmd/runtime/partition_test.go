package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
	"github.com/agentmux/agentmux/store"
)

// netns is a network namespace joined to this one by a veth pair: the test's own
// host, reachable at peer from here, and reaching this side at local.
type netns struct {
	name, hostLink string
	local, peer    string
}

// newNetns makes the namespace and its link; it needs root and iproute2 (.ci/run
// installs it). It is removed at cleanup.
func newNetns(t *testing.T) *netns {
	t.Helper()
	testdeps.Root(t, "to make a network namespace")
	testdeps.System(t, "ip", "iproute2")
	id := os.Getpid() % 200
	n := &netns{name: fmt.Sprintf("amtest%d", os.Getpid()), hostLink: fmt.Sprintf("amh%d", os.Getpid()),
		local: fmt.Sprintf("10.231.%d.1", id), peer: fmt.Sprintf("10.231.%d.2", id)}
	nsLink := fmt.Sprintf("amn%d", os.Getpid())
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", n.hostLink).Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", n.name},
		{"link", "add", n.hostLink, "type", "veth", "peer", "name", nsLink},
		{"link", "set", nsLink, "netns", n.name},
		{"addr", "add", n.local + "/30", "dev", n.hostLink},
		{"link", "set", n.hostLink, "up"},
		{"netns", "exec", n.name, "ip", "addr", "add", n.peer + "/30", "dev", nsLink},
		{"netns", "exec", n.name, "ip", "link", "set", nsLink, "up"},
		{"netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
	} {
		ip(t, args...)
	}
	return n
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// node starts `agentmux up` inside the namespace.
func (n *netns) node(t *testing.T, f *fleet, name string, flags ...string) *proc {
	t.Helper()
	args := append([]string{"netns", "exec", n.name, os.Args[0], "up", "-c", f.manifest, "--name", name, "--log", "info"}, flags...)
	p := startProc(t, exec.Command("ip", args...))
	until(t, name+" up", p.stderr, "node up")
	return p
}

// TestFleetAgentNodePartitioned: the agent node, in its own network namespace, is cut
// off from the cluster for 10 s while its sessions wait for answers a supervisor node
// is deciding; every question still gets the supervisor's answer, none the default,
// and every session ends ok once.
func TestFleetAgentNodePartitioned(t *testing.T) {
	t.Parallel()
	ns := newNetns(t)
	f := startFleetOn(t, ns.local, simHost(`question_timeout = "60s"`+"\npool = 5")+
		slowPolicy(t, t.TempDir(), 2*time.Second)+"[[routes]]\nsupervisor = \"policy\"\n")
	_, js := f.conn(t)
	f.node(t, "sup", "--no-hosts")
	ns.node(t, f, "agents", "--no-supervisors")
	var steps []string
	for i := range 4 {
		steps = append(steps, fmt.Sprintf(`{"send":{"type":"approval","id":"a%d","description":"step %d"}},{"await":"a%d"}`, i, i, i))
	}
	script := `{"steps":[` + strings.Join(steps, ",") + `,{"result":"done"}]}`
	tasks := map[string]string{}
	var ids []string
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("t-%d", i))
		tasks[ids[i]] = "agents"
	}
	submitTasks(t, js, "w", script, ids...)
	proctest.EventuallyWithin(t, 30*time.Second, "the sessions are asking", func() bool {
		for _, r := range auditRecords(t, js) {
			if r.Kind == "request" || r.Kind == "answer" {
				return true
			}
		}
		return false
	})
	// The cut lasts until the rest of the fleet counts the node gone (its heartbeat older
	// than wire.NodeDeadAfter) and ten seconds have passed.
	nodes, err := store.OpenNodes(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	ip(t, "link", "set", ns.hostLink, "down")
	cutAt := time.Now()
	proctest.EventuallyWithin(t, 30*time.Second, "the fleet counts the cut-off agent node gone", func() bool {
		if time.Since(cutAt) < 10*time.Second {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		list, now, err := nodes.List(ctx)
		if err != nil {
			return false
		}
		for _, n := range list {
			if n.Name == "agents" && !n.Alive(now) {
				return true
			}
		}
		return false
	})
	ip(t, "link", "set", ns.hostLink, "up")
	t.Logf("cut off for %v", time.Since(cutAt).Round(100*time.Millisecond))
	waitEnded(t, js, tasks)
	// A cut longer than the task's ack wait may have the task delivered again to the
	// same node (docs/fleet.md: a silent node's task can run twice); every attempt's
	// questions must still get the policy's answer (replayed, on a later attempt).
	answered := map[string]bool{}
	for _, r := range auditRecords(t, js) {
		if r.Kind == "answer" {
			answered[r.Session+"/"+r.Request] = true
			if r.Decider != "command:policy" && r.Decider != "replay:command:policy" || r.Outcome != "answered" {
				t.Errorf("session %s attempt %d request %s: %s by %s (%s); want the policy's answer", r.Session, r.Attempt, r.Request, r.Outcome, r.Decider, r.Reason)
			}
		}
	}
	if len(answered) != 20 {
		t.Errorf("%d requests answered in the audit; want 20", len(answered))
	}
	checkInvariants(t, js, ids...)
}
