package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// TestASessionPausesAtItsUsageLimit: the real Claude Code, behind its node's gateway, is
// answered 429 with a reset 20 s ahead; the session is paused, not failed: its process
// stops, its one slot runs another session meanwhile, and it goes on after the reset and
// ends ok once, its audit saying it was paused and until when.
func TestASessionPausesAtItsUsageLimit(t *testing.T) {
	t.Parallel()
	api := agenttest.NewAnthropic(t, []agenttest.Block{{Text: "done"}})
	api.Limit(1, "20")
	f := startFleet(t, "")
	nc, js := f.conn(t)
	paused := events[wire.SessionPaused](t, nc, wire.EventSubject("claude", "t-limited", wire.EventSessionPaused))
	ended := events[wire.SessionEnded](t, nc, wire.EventSubject("claude", "*", wire.EventSessionEnded))
	home := t.TempDir()
	manifest := f.write(t, "limited.toml", f.header+fmt.Sprintf(`[connections.anthropic]
provider = "anthropic"
api_key_env = "NODE_ANTHROPIC_KEY"
base_url = %q
[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
pool = 1
stop_grace = "2s"
model = { connection = "anthropic" }
env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
`, api.URL(), agenttest.Claude(t), t.TempDir(), home, filepath.Join(home, ".claude")))
	cmd := exec.Command(os.Args[0], "up", "-c", manifest, "--name", "agents1", "--log", "info")
	cmd.Env = []string{"NODE_ANTHROPIC_KEY=sk-node"}
	up := startProc(t, cmd)
	untilWithin(t, "agents1 up", up.stderr, "node up", time.Minute)

	submitTasks(t, js, "claude", "Say done.", "t-limited")
	var p wire.SessionPaused
	select {
	case p = <-paused:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the session was not paused at its limit:\n%s", up.stderr)
	}
	until := time.UnixMilli(p.Until)
	if !strings.Contains(p.Reason, "usage limit") || time.Until(until) < 5*time.Second || time.Until(until) > 21*time.Second {
		t.Fatalf("paused %+v; want at the usage limit, until about 20 s from now", p)
	}
	submitTasks(t, js, "claude", "Say done.", "t-other")
	var order []wire.SessionEnded
	for deadline := time.After(2 * time.Minute); !slices.ContainsFunc(order, func(e wire.SessionEnded) bool { return e.Session == "t-limited" && e.Outcome == "ok" }); {
		select {
		case e := <-ended:
			order = append(order, e)
		case <-deadline:
			t.Fatalf("the paused session did not end ok within 2 minutes; ends so far %+v:\n%s", order, up.stderr)
		}
	}
	var outcomes []string
	for _, e := range order {
		outcomes = append(outcomes, e.Session+":"+e.Outcome)
	}
	if want := []string{"t-limited:paused", "t-other:ok", "t-limited:ok"}; !slices.Equal(outcomes, want) {
		t.Errorf("sessions ended %v; want %v: the paused one's slot ran the other meanwhile", outcomes, want)
	}
	var records []string
	var started time.Time
	proctest.EventuallyWithin(t, 30*time.Second, "the second attempt's end in the audit", func() bool {
		records = nil
		for _, r := range auditRecords(t, js) {
			if r.Session != "t-limited" {
				continue
			}
			if r.Kind == wire.EventSessionPaused || r.Kind == "session.ended" {
				records = append(records, fmt.Sprintf("%s/%d:%s", r.Kind, r.Attempt, r.Outcome))
			}
			if r.Kind == "session.started" && r.Attempt == 1 {
				started = time.UnixMilli(r.Time)
			}
		}
		return slices.Contains(records, "session.ended/1:ok")
	})
	slices.Sort(records)
	if want := []string{"session.ended/0:paused", "session.ended/1:ok", "session.paused/0:"}; !slices.Equal(records, want) {
		t.Errorf("the audit of t-limited: %v; want %v", records, want)
	}
	if started.Before(until) {
		t.Errorf("the paused session went on at %v, before its limit reset (%v)", started, until)
	}
}
