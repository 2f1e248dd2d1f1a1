package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// it there and the agent goes on; at the raised budget the person ends the session,
// and the command it was about to run never runs.
func TestConsoleRaisesABudget(t *testing.T) {
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

	var got []string
	for _, f := range []string{"one", "two", "three"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			got = append(got, f)
		}
	}
	if strings.Join(got, " ") != "one two" {
		t.Errorf("written: %v; want one and two, not three", got)
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
