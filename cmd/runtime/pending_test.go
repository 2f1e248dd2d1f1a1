package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
)

// TestFleetStaleHumanRequests: a request waiting for a person whose session ends
// (SIGTERM to its node) or whose node dies (SIGKILL) leaves `agentmux pending`, is
// refused by `agentmux respond` saying why, and has a cancelled outcome in the audit.
func TestFleetStaleHumanRequests(t *testing.T) {
	t.Parallel()
	// Each case has a host of its own: the terminated node hands its task back, and a
	// new node of the same host (pool 1) would run that again before the next one.
	other := strings.Replace(simHost(`question_timeout = "5m"`), "[hosts.w]", "[hosts.v]", 1)
	f := startFleet(t, simHost(`question_timeout = "5m"`)+other+"[supervisors.people]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"people\"\n")
	_, js := f.conn(t)
	people := f.node(t, "people", "--no-hosts")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("people:\n%s", people.stderr)
		}
	})
	script := `{"steps":[{"send":{"type":"approval","id":"a1","description":"a person must say"}},{"await":"a1"},{"result":"done"}]}`

	for _, c := range []struct {
		name, host, session, why string
		stop                     func(*proc)
	}{
		{"terminated", "w", "t-term", "cancelled: session ended", func(p *proc) {
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 30*time.Second); code != exitOK {
				t.Fatalf("the agent node exited %d on SIGTERM:\n%s", code, p.stderr)
			}
		}},
		{"killed", "v", "t-kill", "orphaned: node agents-killed is gone", func(p *proc) { kill(t, p) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			agents := f.node(t, "agents-"+c.name, "--no-supervisors", "--hosts", c.host, "--grace", "1s")
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("agents:\n%s", agents.stderr)
				}
			})
			submitTasks(t, js, c.host, script, c.session)
			var id string
			proctest.EventuallyWithin(t, 30*time.Second, "the request in agentmux pending", func() bool {
				id = fleetPending(t, f, c.session)
				return id != ""
			})
			c.stop(agents)
			proctest.EventuallyWithin(t, 30*time.Second, "the request leaving agentmux pending", func() bool { return fleetPending(t, f, c.session) == "" })
			code, _, stderr := fleetCLI(t, "respond", "-c", f.manifest, id, "yes")
			if code != exitError || !strings.Contains(stderr, id+" was cancelled: "+c.why) || !strings.Contains(stderr, "no answer can reach the agent") {
				t.Fatalf("respond to a stale request: exit %d, %s", code, stderr)
			}
			proctest.EventuallyWithin(t, 20*time.Second, "a cancelled outcome in the audit", func() bool {
				for _, r := range auditRecords(t, js) {
					if r.Session == c.session && r.Kind == "answer" && r.Outcome == "cancelled" {
						return true
					}
				}
				return false
			})
			checkInvariants(t, js)
		})
	}
}

// fleetPending is the id of the request of session waiting for a person, or "".
func fleetPending(t *testing.T, f *fleet, session string) string {
	t.Helper()
	code, out, stderr := fleetCLI(t, "pending", "-c", f.manifest, "--json")
	if code != exitOK {
		t.Fatalf("pending: exit %d, %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		var p struct{ ID, Session string }
		if json.Unmarshal([]byte(line), &p) == nil && p.Session == session {
			return p.ID
		}
	}
	return ""
}

// fleetCLI runs a CLI command on the fleet's manifest.
func fleetCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	p := runtimeProc(t, args...)
	code := p.wait(t, 30*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}
