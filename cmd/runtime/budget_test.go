package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// budgetManifest is a node whose real Claude Code, against a scripted API, has a budget
// of 200 tokens; its budget requests go to the person on call, its approvals to a rule.
func budgetManifest(t *testing.T, api *agenttest.Anthropic, dir string) string {
	home := t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
stop_grace = "2s"
question_timeout = "5m"
budget = { tokens = 200 }
env = { HOME = %[5]q, CLAUDE_CONFIG_DIR = %[6]q, ANTHROPIC_BASE_URL = %[7]q, ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "echo ", answer = "yes" }]
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "budget"
supervisor = "oncall"
[[routes]]
supervisor = "ops"
`, proctest.FreePort(t), filepath.Join(t.TempDir(), "store"), agenttest.Claude(t), dir, home, filepath.Join(home, ".claude"), api.URL())
	path := filepath.Join(t.TempDir(), "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cardWith waits for the request card whose text contains part and returns its
// selector.
func cardWith(t *testing.T, ctx context.Context, part string) string {
	t.Helper()
	id := get(t, ctx, "a card saying "+part, chromedp.Poll[string](fmt.Sprintf(
		`(Array.from(document.querySelectorAll(".request:not(.settled)")).find(c => c.querySelector(".text").textContent.includes(%q)) || {dataset: {}}).dataset.id`, part),
		chromedp.WithPollingTimeout(50*time.Second)))
	return fmt.Sprintf(`.request[data-id=%q]`, id)
}

// sessionStateIn waits until the sessions table's state of session starts with want,
// and returns it.
func sessionStateIn(t *testing.T, ctx context.Context, session, want string) string {
	t.Helper()
	return get(t, ctx, session+"'s state "+want, chromedp.Poll[string](fmt.Sprintf(
		`(c => c && c.textContent.startsWith(%q) ? c.textContent : false)(document.querySelector('#sessions tr[data-session=%q] td:nth-child(4)'))`, want, session),
		chromedp.WithPollingTimeout(50*time.Second)))
}

// TestConsoleRaisesABudget: the real Claude Code reaches its token budget and is
// paused; the page shows the session paused and the budget request; a person raises
// it there and the agent goes on; at the raised budget the person ends the session.
func TestConsoleRaisesABudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bash := func(file string) []agenttest.Block {
		return []agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "echo " + file + " > " + filepath.Join(dir, file), "description": "write " + file}}}
	}
	api := agenttest.NewAnthropic(t, bash("one"), bash("two"), bash("two"), bash("three"), []agenttest.Block{{Text: "never"}})
	manifest := budgetManifest(t, api, dir)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-budget", "--follow", "claude", "write the files")
	first := cardWith(t, ctx, "tokens of 200; go on with +200 tokens?")
	if paused := sessionStateIn(t, ctx, "t-budget", "paused: spent "); !strings.HasSuffix(paused, " tokens of 200") {
		t.Errorf("the sessions table says %q; want it paused at 200 tokens", paused)
	}
	if label := text(t, ctx, first+" button.raise"); label != "Raise +200 tokens and go on" {
		t.Errorf("the raise button says %q", label)
	}
	shot(t, ctx, "1-paused")
	do(t, ctx, "raise the budget", chromedp.Click(chromedp.CSS(first+" button.raise")))
	outcome(t, ctx, first, `answered "yes" by human:ana`)

	second := cardWith(t, ctx, "tokens of 400; go on with +200 tokens?")
	do(t, ctx, "end the session", chromedp.Click(chromedp.CSS(second+" button.end")))
	outcome(t, ctx, second, `answered "no" by human:ana (budget not raised)`)
	if code := follow.wait(t, 60*time.Second); code == exitOK || !strings.Contains(follow.stdout.String()+follow.stderr.String(), "budget exceeded: spent ") {
		t.Fatalf("submit --follow: exit %d\n%s%s; want the session ended at its budget", code, follow.stdout, follow.stderr)
	}
	if ended := sessionStateIn(t, ctx, "t-budget", "budget_exceeded: budget exceeded: spent "); !strings.HasSuffix(ended, " tokens of 400; human:ana did not raise it") {
		t.Errorf("the sessions table says %q", ended)
	}
	shot(t, ctx, "2-ended")

	// Whether three ran depends on where in its turn the interrupt found it.
	for _, f := range []string{"one", "two"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
	records, err := readAudit(t, manifest, "t-budget")
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, r := range records {
		switch r.Kind {
		case wire.EventSessionPaused, wire.EventSessionResumed:
			trail = append(trail, r.Kind+" "+r.Decider)
		case "session.ended":
			trail = append(trail, r.Kind+" "+r.Outcome)
		case "answer":
			if r.Type == "budget" {
				trail = append(trail, r.Request+" "+string(r.Value)+" "+r.Decider)
			}
		}
	}
	want := `session.paused  budget-1 "yes" human:ana session.resumed human:ana session.paused  budget-2 "no" human:ana session.ended budget_exceeded`
	if strings.Join(trail, " ") != want {
		t.Errorf("the audit: %s\nwant: %s", strings.Join(trail, " "), want)
	}
}

// dailyManifest is a node of a scripted host w with a daily budget of $1, and extra.
func dailyManifest(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
stop_grace = "2s"
[budgets.daily]
usd = 1
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0]) + extra
	manifest := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestDailyBudgetHoldsTasksInTheQueue: once a host's sessions spent its daily budget,
// fleet-wide, its next task waits in the queue, shown held by `tasks` and `budget`;
// a raise lets it run, recorded in the audit as who raised it and why.
func TestDailyBudgetHoldsTasksInTheQueue(t *testing.T) {
	t.Parallel()
	manifest := dailyManifest(t, `[pipelines.p]
[[pipelines.p.stages]]
name = "a"
host = "w"
prompt = '{"steps":[{"result":"a"}]}'
`)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	spends := func(usd string) string {
		return `{"steps":[{"send":{"type":"usage","model":"m","input_tokens":10,"output_tokens":1,"cost_usd":` + usd + `}},{"result":"done"}]}`
	}
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-first", "--follow", "w", spends("1.5")); code != exitOK {
		t.Fatalf("the first task: exit %d\n%s%s", code, out, stderr)
	}
	proctest.EventuallyWithin(t, 20*time.Second, "w's day held at its budget", func() bool {
		_, out, _ := runCLI("budget", "-c", manifest, "-o", "json")
		return strings.Contains(out, `"state":"held"`)
	})
	// Its submitter is told the task is held, and why.
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-second", "w", spends("0.25")); code != exitOK ||
		!strings.Contains(stderr, "the task is held: w has spent $1.50 of its $1.00 daily budget on ") || !strings.Contains(stderr, "agentmux budget raise --host w") {
		t.Fatalf("the second task: exit %d\n%s%s", code, out, stderr)
	}
	// A pipeline with a stage on w waits too: its run would start work on w.
	pipelineRun := runtimeProc(t, "submit", "-c", manifest, "--id", "p-held", "--follow", "p")
	proctest.Within(t, 20*time.Second, func() error {
		_, out, stderr := runCLI("tasks", "-c", manifest, "-o", "json")
		for _, id := range []string{"t-second", "p-held"} {
			if !regexp.MustCompile(`"id":"` + id + `".*"state":"held"`).MatchString(out) {
				return fmt.Errorf("tasks: %s%s; want %s held (submit: %s%s)", out, stderr, id, pipelineRun.stdout, pipelineRun.stderr)
			}
		}
		return nil
	})
	if _, out, _ := runCLI("budget", "-c", manifest); !strings.Contains(out, "w     $1.5000  $1.00   -       held") {
		t.Errorf("budget:\n%s", out)
	}
	if !strings.Contains(up.stderr.String(), "host w spent $1.50 of its $1 daily budget today (UTC); its tasks wait in the queue until tomorrow, a raise") {
		t.Errorf("the node did not say why it holds w's tasks:\n%s", up.stderr)
	}

	for _, bad := range [][]string{{"--host", "w", "--usd", "-1"}, {"--host", "nosuch", "--usd", "1"}} {
		code, _, stderr := runCLI(append([]string{"budget", "raise", "-c", manifest, "--as", "ana"}, bad...)...)
		if code == exitOK || !strings.Contains(stderr, "give the US dollars to raise it by") && !strings.Contains(stderr, "host nosuch is not in the manifest") {
			t.Errorf("budget raise %v: exit %d, %s; want it refused, saying why", bad, code, stderr)
		}
	}
	raised := time.Now().UnixMilli()
	code, out, stderr := runCLI("budget", "raise", "-c", manifest, "--host", "w", "--usd", "1", "--note", "release day", "--as", "ana")
	if code != exitOK || !strings.Contains(out, "w's daily budget on "+time.Now().UTC().Format(time.DateOnly)+" raised by $1.00 to $2.00 ($1.5000 spent)") {
		t.Fatalf("budget raise: exit %d\n%s%s", code, out, stderr)
	}
	var started int64
	proctest.Within(t, 20*time.Second, func() error {
		records, err := readAudit(t, manifest, "t-second")
		if err != nil {
			return err
		}
		for _, r := range records {
			if r.Kind == "session.started" {
				started = r.Time
			}
			if r.Kind == "session.ended" && r.Outcome == "ok" {
				return nil
			}
		}
		return fmt.Errorf("t-second has not ended ok: %d records", len(records))
	})
	if started < raised {
		t.Errorf("t-second started at %d, before the raise at %d", started, raised)
	}
	if code := pipelineRun.wait(t, 30*time.Second); code != exitOK {
		t.Errorf("the pipeline run held with w: exit %d once raised\n%s%s", code, pipelineRun.stdout, pipelineRun.stderr)
	}
	records, err := readAudit(t, manifest, "_budget")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Kind != "budget.raised" || records[0].Decider != "human:ana" || records[0].Reason != "release day" || records[0].Host != "w" {
		t.Errorf("the raise's audit: %+v", records)
	}
	_, out, _ = runCLI("budget", "-c", manifest, "-o", "json")
	var day struct{ State string }
	_ = json.Unmarshal([]byte(out), &day)
	if !strings.Contains(out, `"cost_usd":1.75`) || !strings.Contains(out, `"raised_usd":1`) || !strings.Contains(out, `"limit_usd":2`) || day.State != "taken" {
		t.Errorf("budget -o json: %s; want $1.75 of $2, taken", out)
	}
}

// TestConsoleRaisesADailyBudget: a host at its daily budget shows as held in the
// console, its task waiting; a person raises it there with a note, and the task runs;
// the raise is shown on the host's row and audited in the person's name.
func TestConsoleRaisesADailyBudget(t *testing.T) {
	t.Parallel()
	manifest := dailyManifest(t, "")
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	spends := `{"steps":[{"send":{"type":"usage","model":"m","input_tokens":10,"output_tokens":1,"cost_usd":1.5}},{"result":"done"}]}`
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-spent", "--follow", "w", spends); code != exitOK {
		t.Fatalf("the first task: exit %d\n%s%s", code, out, stderr)
	}
	held := runtimeProc(t, "submit", "-c", manifest, "--id", "t-held", "--follow", "w", `{"steps":[{"result":"ran"}]}`)

	ctx := browser(t)
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))
	row := `#budgets tbody tr[data-host="w"]`
	state := get(t, ctx, "w held", chromedp.Poll[string](fmt.Sprintf(
		`(r => r && r.classList.contains("held") ? r.textContent : (loadBudgets(), false))(document.querySelector(%q))`, row),
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(time.Second)))
	if !strings.Contains(state, "$1.5000") || !strings.Contains(state, "$1.00") || !strings.Contains(state, "held: they wait in the queue") {
		t.Errorf("w's row while held: %q", state)
	}
	shot(t, ctx, "daily-1-held")
	select {
	case <-held.done:
		t.Fatalf("t-held ran while w was at its daily budget: exit %d\n%s", held.code, held.stdout)
	default:
	}

	raised := time.Now().UnixMilli()
	do(t, ctx, "raise w's budget", chromedp.SendKeys(chromedp.CSS(row+" input.raise-usd"), "1"),
		chromedp.SendKeys(chromedp.CSS(row+" input.raise-note"), "release day"),
		chromedp.Click(chromedp.CSS(row+" button.raise-budget")))
	after := get(t, ctx, "w taken again", chromedp.Poll[string](fmt.Sprintf(
		`(r => r && r.classList.contains("taken") ? r.textContent : false)(document.querySelector(%q))`, row),
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(500*time.Millisecond)))
	if !strings.Contains(after, "$2.00") || !strings.Contains(after, "+$1.00 (ana)") {
		t.Errorf("w's row once raised: %q", after)
	}
	shot(t, ctx, "daily-2-raised")
	if code := held.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("t-held once w was raised: exit %d\n%s%s", code, held.stdout, held.stderr)
	}
	records, err := readAudit(t, manifest, "_budget")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Kind != "budget.raised" || records[0].Decider != "human:ana" || records[0].Reason != "release day" || records[0].Time < raised {
		t.Errorf("the raise's audit: %+v", records)
	}
}

// TestAnAgentsClaimsCannotSpendTheDay plays an agent that lies in its usage lines, with
// real processes: a line claiming $1e308 pauses its own session (not counted; no
// supervisor raises it, so it ends budget_exceeded) and its host's next task runs; a
// total of 0 does not undo what a session spent, so its budget still pauses it; a
// session without a usd budget is paused at the fleet's ceiling; and when spend does
// hold the host, an operator's reset releases it, audited.
func TestAnAgentsClaimsCannotSpendTheDay(t *testing.T) {
	t.Parallel()
	manifest := dailyManifest(t, `[hosts.b]
command = "`+os.Args[0]+`"
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
budget = { usd = 1 }
[budgets]
session_usd = 0.5
`)
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	usage := func(fields string) string {
		return `{"send":{"type":"usage","model":"m","input_tokens":10,"output_tokens":1` + fields + `}}`
	}
	outcome := func(session string) (string, string) {
		t.Helper()
		var outcome, reason string
		proctest.Within(t, 20*time.Second, func() error {
			records, err := readAudit(t, manifest, session)
			if err != nil {
				return err
			}
			for _, r := range records {
				if r.Kind == "session.paused" {
					reason = r.Reason
				}
				if r.Kind == "session.ended" {
					outcome = r.Outcome
					return nil
				}
			}
			return fmt.Errorf("%s has not ended: %d records", session, len(records))
		})
		return outcome, reason
	}

	// A runaway figure: its session is paused and ends; the day is not spent.
	runCLI("submit", "-c", manifest, "--id", "t-liar", "--follow", "w", `{"steps":[`+usage(`,"cost_usd":1e308`)+`,{"result":"done"}]}`)
	if got, why := outcome("t-liar"); got != "budget_exceeded" || !strings.Contains(why, "an impossible $1e+308 in one usage line") {
		t.Errorf("the liar's session: %s, paused for %q; want budget_exceeded, paused for the impossible claim", got, why)
	}
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-next", "w", `{"steps":[`+usage(`,"cost_usd":0.25`)+`,{"result":"done"}]}`); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	if got, _ := outcome("t-next"); got != "ok" {
		t.Fatalf("the host's next task after the liar's: %s; want it run, ok", got)
	}

	// A total of 0 does not reset a session's spend: $0.9, "0 in all", $0.5 reaches $1.
	runCLI("submit", "-c", manifest, "--id", "t-reset", "--follow", "b",
		`{"steps":[`+usage(`,"cost_usd":0.9`)+`,{"send":{"type":"usage","model":"m","total":true,"input_tokens":0,"output_tokens":0,"cost_usd":0}},`+usage(`,"cost_usd":0.5`)+`,{"result":"done"}]}`)
	if got, why := outcome("t-reset"); got != "budget_exceeded" || !strings.Contains(why, "$1.40 of $1") {
		t.Errorf("the session whose agent sent a total of 0: %s, paused for %q; want budget_exceeded at $1.40 of $1", got, why)
	}

	// A session without a usd budget is paused at [budgets] session_usd ($0.5), and what
	// it spent counts: w's day holds ($0.25 + $0.9 = $1.15 of $1); a reset releases it.
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-held", "w", `{"steps":[`+usage(`,"cost_usd":0.9`)+`,{"result":"done"}]}`); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	if got, why := outcome("t-held"); got != "budget_exceeded" || !strings.Contains(why, "$0.90, the most a session without a usd budget may ($0.50, [budgets] session_usd)") {
		t.Errorf("the session past the ceiling: %s, paused for %q; want budget_exceeded at the ceiling", got, why)
	}
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-after", "w", `{"steps":[{"result":"done"}]}`); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	proctest.Within(t, 20*time.Second, func() error {
		if _, out, _ := runCLI("tasks", "-c", manifest, "-o", "json"); !regexp.MustCompile(`"id":"t-after".*"state":"held"`).MatchString(out) {
			return fmt.Errorf("tasks: %s; want t-after held", out)
		}
		return nil
	})
	code, out, stderr := runCLI("budget", "reset", "-c", manifest, "--host", "w", "--note", "a runaway day", "--as", "ana")
	if code != exitOK || !strings.Contains(out, "w's daily spend on "+time.Now().UTC().Format(time.DateOnly)+" reset: $1.1500 released, its $1.00 budget whole again") {
		t.Fatalf("budget reset: exit %d\n%s%s", code, out, stderr)
	}
	if got, _ := outcome("t-after"); got != "ok" {
		t.Errorf("t-after after the reset: %s; want ok", got)
	}
	records, err := readAudit(t, manifest, "_budget")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Kind != "budget.reset" || records[0].Decider != "human:ana" || records[0].Reason != "a runaway day" {
		t.Errorf("the reset's audit: %+v", records)
	}
	if code, _, stderr := runCLI("budget", "reset", "-c", manifest, "--host", "w", "--usd", "5", "--as", "ana"); code == exitOK || !strings.Contains(stderr, "-usd") {
		t.Errorf("budget reset --usd 5: exit %d, %s; want the flag refused", code, stderr)
	}
}
