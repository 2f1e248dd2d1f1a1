package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/wire"
)

// rulesManifest is a node whose approvals go to rule supervisor policy, which keeps
// its rules in policy.rules.toml and asks ana (oncall) about what no rule covers.
// With natsURL it connects to the first node's server, a second node of the same
// fleet; every process connects as the node user fleet.
func rulesManifest(t *testing.T, dir string, port int, natsURL string) string {
	t.Helper()
	const fleetUser = "user = \"fleet\"\npassword_env = \"AGENTMUX_TEST_FLEET_PASSWORD\"\n"
	nats := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n%s[[nats.users]]\nname = \"fleet\"\npassword_env = \"AGENTMUX_TEST_FLEET_PASSWORD\"\nrole = \"node\"\n",
		port, filepath.Join(dir, "store"), fleetUser)
	if natsURL != "" {
		nats = fmt.Sprintf("[nats]\nurl = %q\n%s", natsURL, fleetUser)
	}
	m := nats + fmt.Sprintf(`[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
question_timeout = "5m"
stop_grace = "2s"
pool = 2
[supervisors.policy]
strategy = "rule"
deny = ["Bash(rm:*)"]
rules_file = "policy.rules.toml"
escalate = { to = "oncall" }
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "approval"
supervisor = "policy"
[[routes]]
supervisor = "oncall"
`, os.Args[0])
	path := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(path, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConsoleAlwaysForThisRule: "Always…" on an approval proposes a rule from what the
// agent asks (Bash(npm test:*)), which the person edits before saving; saved, it is
// written into the rules file of the supervisor that escalated the request on both
// nodes that run it, each reloads, and the request is answered by it. The next
// session's same request is decided by the rule, with no person; the rule is listed
// under Standing answers and, removed there, its request is asked again. The audit
// holds the answer with scope rule, and one record of each change of the rules.
func TestConsoleAlwaysForThisRule(t *testing.T) {
	t.Parallel()
	dirA, dirB := t.TempDir(), t.TempDir()
	port := proctest.FreePort(t)
	manifest := rulesManifest(t, dirA, port, "")
	up := runtimeProc(t, "up", "-c", manifest, "--name", "a")
	until(t, "agentmux up (a)", up.stderr, "node up")
	second := runtimeProc(t, "up", "-c", rulesManifest(t, dirB, 0, fmt.Sprintf("nats://127.0.0.1:%d", port)), "--name", "b", "--no-hosts")
	until(t, "agentmux up (b)", second.stderr, "node up")
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	approval := func(id, cmd string) string {
		return fmt.Sprintf(`{"send":{"type":"approval","id":%q,"description":%q,"tool":"Bash","input":{"command":%q}}},{"await":%q}`, id, cmd, cmd, id)
	}
	submit := func(id string, steps ...string) *proc {
		return runtimeProc(t, "submit", "-c", manifest, "--id", id, "--follow", "w", `{"steps":[`+strings.Join(steps, ",")+`,{"result":"done"}]}`)
	}
	finished := func(p *proc, id string) {
		t.Helper()
		if code := p.wait(t, 60*time.Second); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", id, code, p.stderr)
		}
	}
	records := func(session string) map[string]*wire.AuditRecord {
		t.Helper()
		list, err := readAudit(t, manifest, session)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*wire.AuditRecord{}
		for _, r := range list {
			key := r.Kind + ":" + r.Request
			if _, twice := out[key]; twice && r.Kind != "answer" {
				t.Errorf("%s holds two %s records: every node wrote the change, the audit must keep one", session, key)
			}
			out[key] = r
		}
		return out
	}
	fileRules := func(dir string) []string {
		t.Helper()
		f, err := permission.ReadFile(filepath.Join(dir, "policy.rules.toml"))
		if err != nil {
			t.Fatal(err)
		}
		return f.Rules(permission.Allow)
	}

	// Asked of ana: "Always…" proposes the rule, she adds one for lint and saves.
	first := submit("t-r1", approval("a1", "npm test -- --watch"))
	card := cardFor(t, ctx, "npm test -- --watch")
	do(t, ctx, "always", chromedp.Click(chromedp.CSS(card+" button.always")))
	proposed := get(t, ctx, "the proposed rule", chromedp.Poll[string](`(document.querySelector(".always-form textarea.rules") || {}).value`, chromedp.WithPollingTimeout(25*time.Second)))
	if proposed != "Bash(npm test:*)" {
		t.Fatalf("the rule proposed for npm test -- --watch is %q; want Bash(npm test:*)", proposed)
	}
	if sup := get(t, ctx, "the supervisor", chromedp.Evaluate[string](`document.querySelector(".always-form select.supervisor").value`)); sup != "policy" {
		t.Fatalf("the rules file offered is supervisor %q's; want policy's, which escalated the request", sup)
	}
	shot(t, ctx, "always-1-proposed")
	do(t, ctx, "edit and save", chromedp.SendKeys(chromedp.CSS(card+" textarea.rules"), "\nBash(npm run lint:*)"),
		chromedp.SendKeys(chromedp.CSS(card+" input.note"), "tests and lint are safe"),
		chromedp.Click(chromedp.CSS(card+" button.save-rule")))
	outcome := get(t, ctx, "the answer by the rule", chromedp.Poll[string](fmt.Sprintf(`(t => t.startsWith("answered") || t.startsWith("refused") ? t : false)((document.querySelector(%q) || {textContent: ""}).textContent)`,
		card+" .outcome, "+card+" .rule-outcome.refused"), chromedp.WithPollingTimeout(40*time.Second)))
	if !strings.Contains(outcome, `answered "yes" by human:ana and saved as a rule`) || !strings.Contains(outcome, "Bash(npm test:*), Bash(npm run lint:*) in supervisor policy's rules file") {
		t.Fatalf("the card once the rule is saved: %q", outcome)
	}
	shot(t, ctx, "always-2-saved")
	finished(first, "t-r1")
	want := []string{"Bash(npm test:*)", "Bash(npm run lint:*)"}
	for _, dir := range []string{dirA, dirB} {
		if got := fileRules(dir); !slices.Equal(got, want) {
			t.Fatalf("%s's rules file allows %q; want %q", dir, got, want)
		}
	}
	got := records("t-r1")
	if a := got["answer:a1"]; a == nil || a.Decider != "human:ana" || a.Scope != wire.ScopeRule || string(a.Value) != `"yes"` || !strings.Contains(a.Reason, "Bash(npm test:*)") {
		t.Fatalf("t-r1's answer: %+v", a)
	}
	added := got[wire.AuditRuleAdded+":"+cardID(card)]
	if added == nil || added.Decider != "human:ana" || added.Scope != wire.ScopeRule || added.Text != strings.Join(want, "\n") || string(added.Value) != `"allow"` {
		t.Fatalf("the rule's record: %+v", added)
	}

	// The next session's same requests are decided by the rules, on whichever node.
	next := submit("t-r2", approval("a1", "npm test"), approval("a2", "npm run lint --fix"))
	finished(next, "t-r2")
	by := answeredBy(t, manifest, "t-r2")
	if by["a1"] != "rule:policy" || by["a2"] != "rule:policy" {
		t.Fatalf("t-r2 decided by %v; want both by rule:policy", by)
	}

	// Listed under Standing answers, and removed there.
	rows := func(n int) {
		t.Helper()
		get(t, ctx, fmt.Sprintf("%d rules listed", n), chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("#rules tbody tr").length === %d || (loadRules(), false)`, n),
			chromedp.WithPollingTimeout(25*time.Second), chromedp.WithPollingInterval(time.Second)))
	}
	rows(2)
	row := get(t, ctx, "the rule's row", chromedp.Evaluate[string](`document.querySelector('#rules tbody tr[data-rule="Bash(npm test:*)"]').textContent`))
	if !strings.Contains(row, "policy") || !strings.Contains(row, "allow") || !strings.Contains(row, "human:ana") || !strings.Contains(row, "tests and lint are safe") {
		t.Fatalf("the rule as listed: %q", row)
	}
	shot(t, ctx, "always-3-listed")
	do(t, ctx, "remove it", chromedp.Click(chromedp.CSS(`#rules tbody tr[data-rule="Bash(npm test:*)"] button.remove-rule`)))
	rows(1)
	for _, dir := range []string{dirA, dirB} {
		if got := fileRules(dir); !slices.Equal(got, want[1:]) {
			t.Fatalf("after the removal %s's rules file allows %q; want %q", dir, got, want[1:])
		}
	}
	proctest.Within(t, 20*time.Second, func() error {
		for _, r := range records("policy") {
			if r.Kind == wire.AuditRuleRemoved && r.Decider == "human:ana" && r.Text == "Bash(npm test:*)" {
				return nil
			}
		}
		return fmt.Errorf("no %s record by human:ana in the audit of policy's rules", wire.AuditRuleRemoved)
	})
	// From the command line: listed on both nodes, and the lint rule removed.
	code, out, stderr := runCLI("rules", "-c", manifest)
	if code != exitOK || strings.Count(out, "Bash(npm run lint:*)") != 2 || strings.Contains(out, "Bash(npm test:*)") ||
		!regexp.MustCompile(`(?m)^a +policy +allow +Bash\(npm run lint:\*\) +human:ana`).MatchString(out) {
		t.Fatalf("agentmux rules: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI("rules", "remove", "-c", manifest, "--supervisor", "policy", "--verdict", "allow", "Bash(npm run lint:*)"); code != exitOK ||
		!strings.Contains(out, "a: policy's rules file changed and reloaded") || !strings.Contains(out, "b: policy's rules file changed and reloaded") {
		t.Fatalf("agentmux rules remove: exit %d\n%s%s", code, out, stderr)
	}
	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"allow", "--supervisor", "policy", "Bash(npm test"}, exitUsage, "not a permission rule"},
		{[]string{"remove", "--supervisor", "policy", "Bash(ls)"}, exitUsage, "say which list"},
		{[]string{"allow", "--supervisor", "nobody", "Bash(ls)"}, exitError, "no live node runs supervisor nobody"},
		{[]string{"allow", "--supervisor", "oncall", "Bash(ls)"}, exitError, "supervisor oncall has no rules file on node a"},
	} {
		if code, _, stderr := runCLI(append([]string{"rules", bad.args[0], "-c", manifest}, bad.args[1:]...)...); code != bad.code || !strings.Contains(stderr, bad.want) {
			t.Errorf("agentmux rules %v: exit %d, %q; want exit %d saying %q", bad.args, code, stderr, bad.code, bad.want)
		}
	}
	for _, dir := range []string{dirA, dirB} {
		if got := fileRules(dir); len(got) != 0 {
			t.Fatalf("%s's rules file allows %q; want nothing", dir, got)
		}
	}
	third := submit("t-r3", approval("a1", "npm test"))
	card = waitingCard(t, ctx, "npm test")
	do(t, ctx, "deny it", chromedp.Click(chromedp.CSS(card+" button.deny")), chromedp.SendKeys(chromedp.CSS(card+" input.reason"), "asked again\r"))
	finished(third, "t-r3")
	if by := answeredBy(t, manifest, "t-r3"); by["a1"] != "human:ana" {
		t.Fatalf("t-r3 decided by %v; want ana, asked again once the rule was removed", by)
	}
}

// cardID is the request id of a card's selector.
func cardID(card string) string {
	_, id, _ := strings.Cut(card, `"`)
	return strings.TrimSuffix(id, `"]`)
}
