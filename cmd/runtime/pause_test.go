package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
	"github.com/chromedp/chromedp"
)

// TestASessionPausesAtItsUsageLimit: the real Claude Code is answered 429 with a reset
// 20 s ahead, behind its node's gateway, which sees it, or reaching its model itself,
// when its dialect reads it in Claude Code's api_retry; the session is paused, not
// failed: its process stops, its one slot runs another session meanwhile, and it goes on
// after the reset and ends ok once, its audit saying it was paused and until when.
func TestASessionPausesAtItsUsageLimit(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"gateway", "agent"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			limitPauses(t, via == "gateway")
		})
	}
}

func limitPauses(t *testing.T, gateway bool) {
	api := agenttest.NewAnthropic(t, []agenttest.Block{{Text: "done"}})
	api.Limit(1, "20")
	f := startFleet(t, "")
	nc, js := f.conn(t)
	paused := events[wire.SessionPaused](t, nc, wire.EventSubject("claude", "t-limited", wire.EventSessionPaused))
	ended := events[wire.SessionEnded](t, nc, wire.EventSubject("claude", "*", wire.EventSessionEnded))
	home := t.TempDir()
	model := fmt.Sprintf(`[connections.anthropic]
provider = "anthropic"
api_key_env = "NODE_ANTHROPIC_KEY"
base_url = %q
`, api.URL())
	host := `model = { connection = "anthropic" }
env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
`
	if !gateway {
		model, host = "", `env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, ANTHROPIC_BASE_URL = "`+api.URL()+`", ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
`
	}
	manifest := f.write(t, "limited.toml", f.header+model+fmt.Sprintf(`[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
pool = 1
stop_grace = "2s"
`+host, agenttest.Claude(t), t.TempDir(), home, filepath.Join(home, ".claude")))
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

// flaky is a native agent that checkpoints a step and fails in an attempt that does not
// go on from a checkpoint; one that does says where it went on from.
const flaky = `import json, sys
msg = json.loads(sys.stdin.readline())
r = msg.get("resume")
if not r:
    print(json.dumps({"type": "checkpoint", "state": {"step": 1}}), flush=True)
    print(json.dumps({"type": "error", "message": "flaky"}), flush=True)
else:
    print(json.dumps({"type": "result", "text": json.dumps({"from": r["checkpoint"], "state": r["state"]})}), flush=True)
`

// TestAPausedSessionGoesOnWhenResumed: `agentmux pause` stops a running session at its
// next checkpoint for an hour: `sessions` lists it paused, by hand, and
// agentmux_sessions_paused counts it. `agentmux resume` has it go on at once from that
// checkpoint, its waiting task taken out of the queue; it ends ok once, and nothing is
// left paused. A failed session resumed goes on from its checkpoint as a new attempt;
// one resumed --fresh starts over; one that ended ok is refused. The console shows the
// paused session, till when and why.
func TestAPausedSessionGoesOnWhenResumed(t *testing.T) {
	t.Parallel()
	metrics := fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t))
	manifest := filepath.Join(t.TempDir(), "agentmux.toml")
	body := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[metrics]\naddr = %q\n", proctest.FreePort(t), filepath.Join(t.TempDir(), "store"), metrics) +
		fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nstop_grace = \"2s\"\n[hosts.f]\ncommand = \"python3\"\nargs = [\"-c\", %q]\n", counter, flaky)
	if err := os.WriteFile(manifest, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startProc(t, exec.Command(os.Args[0], "up", "-c", manifest))
	until(t, "agentmux up", up.stderr, "node up")
	cli := func(args ...string) (int, string) {
		code, out, errOut := runCLI(append(args[:1:1], append([]string{"-c", manifest}, args[1:]...)...)...)
		return code, out + errOut
	}
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	page := browser(t)
	do(t, page, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	if code, out := cli("submit", "--id", "t-hand", "w", "count"); code != exitOK {
		t.Fatalf("submit: %d %s", code, out)
	}
	proctest.EventuallyWithin(t, time.Minute, "the session's second checkpoint", func() bool {
		_, out := cli("checkpoints", "t-hand", "-o", "json")
		return strings.Count(out, `"seq"`) >= 2
	})
	if code, out := cli("pause", "t-hand", "--for", "1h", "--reason", "the freeze"); code != exitOK || !strings.Contains(out, "paused at the agent's next checkpoint line") {
		t.Fatalf("pause: %d %s", code, out)
	}
	proctest.EventuallyWithin(t, 30*time.Second, "sessions listing t-hand paused by hand", func() bool {
		_, out := cli("sessions", "-o", "json")
		return strings.Contains(out, `"session":"t-hand"`) && strings.Contains(out, `"state":"paused"`) && strings.Contains(out, `"reason":"hand"`)
	})
	if _, out := cli("sessions"); !regexp.MustCompile(`t-hand\s+w\s+\S+\s+paused until \S+ \(hand\)`).MatchString(out) {
		t.Errorf("sessions lists:\n%s", out)
	}
	if state := sessionStateIn(t, page, "t-hand", "paused: until "); !strings.Contains(state, ": paused by ") || !strings.HasSuffix(state, "the freeze") {
		t.Errorf("the console shows t-hand as %q; want paused until its time, by whom and why", state)
	}
	proctest.EventuallyWithin(t, 10*time.Second, "agentmux_sessions_paused of w by hand at 1", func() bool {
		return strings.Contains(scrape(t, metrics), `agentmux_sessions_paused{host="w",reason="hand"} 1`)
	})
	code, out := cli("resume", "t-hand")
	if code != exitOK || !regexp.MustCompile(`queued again on host w to go on now, from checkpoint \d+ \(it was paused until .*paused by \S+: the freeze\)`).MatchString(out) {
		t.Fatalf("resume: %d %s", code, out)
	}
	ended := sessionEnds(t, cli, "t-hand", 2)
	// The copy a resume queues may come before the pause is handed to it, and again
	// after: each delivery counts an attempt.
	if ended[0].Outcome != wire.OutcomePaused || ended[1].Outcome != "ok" || ended[1].Attempt <= ended[0].Attempt {
		t.Fatalf("ended %+v; want paused, then ok in a later attempt", ended)
	}
	var told struct{ From, Done, Checkpoint int }
	if err := json.Unmarshal([]byte(resultText(t, string(ended[1].Value))), &told); err != nil || told.From < 2 || told.Checkpoint != told.From || told.Done != told.From+3 {
		t.Errorf("the resumed agent said %+v (%v); want it to go on from its checkpoint, the second or later, and count three more", told, err)
	}
	// Where it went on, in its logs and on its page: the resume's node and checkpoint.
	resumed := regexp.MustCompile(`brought back on (\S+) from checkpoint \d+, taken on (\S+) in attempt 0`)
	if _, out := cli("logs", "t-hand"); !strings.Contains(out, "session.resumed") || !resumed.MatchString(out) {
		t.Errorf("agentmux logs does not say where t-hand went on:\n%s", out)
	}
	do(t, page, "open t-hand's page", chromedp.Evaluate[chromedp.Void](`location.hash = "#/session/t-hand"`), chromedp.WaitVisible(chromedp.CSS("#session")))
	row := get(t, page, "t-hand's resume in its trail", chromedp.Poll[string](
		`(r => r ? r.textContent : false)(document.querySelector('#trail tr[data-kind="session.resumed"]'))`, chromedp.WithPollingTimeout(25*time.Second)))
	node := get(t, page, "the resume's node", chromedp.Evaluate[string](`document.querySelector('#trail tr[data-kind="session.resumed"] td.node').textContent`))
	if m := resumed.FindStringSubmatch(row); m == nil || node == "" || m[1] != node {
		t.Errorf("t-hand's trail shows its resume as %q on node %q; want where it was brought back, on that node", row, node)
	}
	proctest.EventuallyWithin(t, 30*time.Second, "nothing paused", func() bool {
		_, out := cli("sessions", "-o", "json")
		m := scrape(t, metrics)
		return !strings.Contains(out, `"paused"`) && strings.Contains(m, "agentmux_sessions_paused_total") && !strings.Contains(m, `agentmux_sessions_paused{`)
	})
	if _, out := cli("tasks", "-o", "json"); strings.Contains(out, "t-hand") {
		t.Errorf("the paused session's waiting task is still queued:\n%s", out)
	}
	if code, out := cli("resume", "t-hand"); code == exitOK || !strings.Contains(out, "ended ok: nothing to resume") {
		t.Errorf("resume of a session that ended ok: %d %s", code, out)
	}

	for _, c := range []struct {
		id      string
		flags   []string
		outcome string
	}{{"t-flaky", nil, "ok"}, {"t-fresh", []string{"--fresh"}, "error"}} {
		if code, out := cli("submit", "--id", c.id, "--follow", "f", "step"); code == exitOK {
			t.Fatalf("submit of a flaky agent's task: %d %s", code, out)
		}
		code, out := cli(append([]string{"resume", c.id}, c.flags...)...)
		if code != exitOK || !strings.Contains(out, "queued again on host f as attempt 1") {
			t.Fatalf("resume %s %v: %d %s", c.id, c.flags, code, out)
		}
		ended := sessionEnds(t, cli, c.id, 2)
		if ended[0].Outcome != "error" || ended[1].Outcome != c.outcome || ended[1].Attempt != 1 {
			t.Fatalf("%s %v ended %+v; want error, then %s in attempt 1\n%s", c.id, c.flags, ended, c.outcome, up.stderr)
		}
		if c.outcome == "ok" && !strings.Contains(resultText(t, string(ended[1].Value)), `"from": 1`) {
			t.Errorf("the failed session resumed said %s; want it to go on from checkpoint 1", resultText(t, string(ended[1].Value)))
		}
	}
}

// sessionEnds polls the audit of session id until it has n ends, and returns them by attempt.
func sessionEnds(t *testing.T, cli func(...string) (int, string), id string, n int) []wire.AuditRecord {
	t.Helper()
	var ended []wire.AuditRecord
	proctest.EventuallyWithin(t, time.Minute, fmt.Sprintf("%d ends of %s in the audit", n, id), func() bool {
		ended = nil
		_, out := cli("audit", id, "-o", "json")
		for _, line := range strings.Split(out, "\n") {
			var r wire.AuditRecord
			if json.Unmarshal([]byte(line), &r) == nil && r.Kind == "session.ended" {
				ended = append(ended, r)
			}
		}
		return len(ended) >= n
	})
	slices.SortFunc(ended, func(a, b wire.AuditRecord) int { return a.Attempt - b.Attempt })
	return ended
}

// scrape is what a node's metrics endpoint at addr serves, or "" when it does not.
func scrape(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestFleetResumeOnTheNodeNamed: `agentmux resume --node` has a paused session go on on
// the node named, though that node is busy and the other node of its host has fifteen
// free slots: the session waits for the node named, and goes on there once its slot is
// free. A node that is not up, or does not run the host, is refused with what to do,
// and the session stays paused.
func TestFleetResumeOnTheNodeNamed(t *testing.T) {
	t.Parallel()
	host := func(pool int) string {
		return fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nstop_grace = \"2s\"\npool = %d\n", counter, pool)
	}
	f := startFleet(t, host(16))
	nc, js := f.conn(t)
	cli := func(args ...string) (int, string) {
		code, out, errOut := runCLI(append(args[:1:1], append([]string{"-c", f.manifest}, args[1:]...)...)...)
		return code, out + errOut
	}
	checkpointed := func(id string) {
		proctest.EventuallyWithin(t, time.Minute, id+"'s second checkpoint", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			list, err := store.ListCheckpoints(ctx, nc, id)
			return err == nil && len(list) >= 2
		})
	}
	paused := func(id string) {
		if code, out := cli("pause", id, "--for", "1h"); code != exitOK {
			t.Fatalf("pause %s: %d %s", id, code, out)
		}
		proctest.EventuallyWithin(t, 30*time.Second, id+" paused", func() bool {
			_, out := cli("sessions", "--state", "paused", "-o", "json")
			return strings.Contains(out, `"session":"`+id+`"`)
		})
	}
	// narrow's one slot runs t-busy; wide, up after, runs t-aim.
	f.nodeWith(t, "narrow", host(1))
	submitTasks(t, js, "w", "count", "t-busy")
	checkpointed("t-busy")
	f.node(t, "wide")
	submitTasks(t, js, "w", "count", "t-aim")
	checkpointed("t-aim")
	paused("t-aim")
	for node, refusal := range map[string]string{"gone": "node gone is not up; these are: ", "nats1": "node nats1 does not run host w (it runs none)"} {
		if code, out := cli("resume", "t-aim", "--node", node); code == exitOK || !strings.Contains(out, refusal) {
			t.Errorf("resume --node %s: %d %s; want it refused: %s", node, code, out, refusal)
		}
	}
	if _, out := cli("sessions", "--state", "paused", "-o", "json"); !strings.Contains(out, `"session":"t-aim"`) {
		t.Fatalf("after the refused resumes, t-aim is not paused:\n%s", out)
	}
	if code, out := cli("resume", "t-aim", "--node", "narrow"); code != exitOK || !strings.Contains(out, "queued again on host w for node narrow") {
		t.Fatalf("resume --node narrow: %d %s", code, out)
	}
	// Left to wide, t-aim would go on at once; it waits for narrow's slot.
	paused("t-busy")
	ended := sessionEnds(t, cli, "t-aim", 2)
	if ended[0].Outcome != wire.OutcomePaused || ended[0].Node != "wide" || ended[1].Outcome != "ok" || ended[1].Node != "narrow" {
		t.Errorf("ended %s on %s, then %s on %s; want paused on wide, then ok on narrow", ended[0].Outcome, ended[0].Node, ended[1].Outcome, ended[1].Node)
	}
}
