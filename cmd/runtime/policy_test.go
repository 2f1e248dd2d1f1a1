package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/permission"
	"github.com/agentmux/agentmux/wire"
)

// policyNode starts a node of scripted host w and supervisors (its routes too), with an
// empty folder learned/ beside the manifest for a rules file; it returns the manifest's
// path, its text and its folder.
func policyNode(t *testing.T, supervisors string) (manifest, text, dir string) {
	t.Helper()
	dir = t.TempDir()
	text = fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
stop_grace = "2s"
question_timeout = "2m"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0]) + supervisors
	manifest = filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "learned"), 0o755); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	return manifest, text, dir
}

// approvals is a scripted agent's session that asks approval of each command in turn,
// then ends.
func approvals(cmds ...string) string {
	var steps []string
	for i, cmd := range cmds {
		steps = append(steps, fmt.Sprintf(`{"send":{"type":"approval","id":"a%d","tool":"Bash","input":{"command":%q},"description":%q}},{"await":"a%d"}`, i, cmd, cmd, i))
	}
	return `{"steps":[` + strings.Join(steps, ",") + `,{"result":"done"}]}`
}

// opsRules is rule supervisor ops: npm test allowed, rm denied.
const opsRules = `[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^npm test", answer = "yes" }, { type = "approval", match = "^rm ", answer = "no" }]
`

// TestPolicySuggestFromTheFleetsAudit: sessions of a scripted agent ask approvals that
// rule supervisor ops decides; agentmux policy suggest reads them back from the audit
// (each with the tool call it asked) and proposes the rule they agree on, as a table,
// as JSON and as a rules file, and writes it where a rule supervisor loads it.
func TestPolicySuggestFromTheFleetsAudit(t *testing.T) {
	t.Parallel()
	manifest, m, dir := policyNode(t, opsRules+`[supervisors.learned]
strategy = "rule"
rules_file = "learned/rules.toml"
[[routes]]
supervisor = "ops"
`)
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-history", "--follow", "w",
		approvals("npm test", "npm test -- --ci", "npm test", "rm -rf /tmp/x", "npm test -- --ci", "rm -rf build", "npm test")); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}

	var out, stderr string
	proctest.Within(t, 20*time.Second, func() error { // the audit is written as the session goes
		var code int
		code, out, stderr = runCLI("policy", "suggest", "-c", manifest, "--since", "1d")
		if code != exitOK || !strings.Contains(stderr, "7 approvals decided") {
			return fmt.Errorf("policy suggest: exit %d\n%s%s", code, out, stderr)
		}
		return nil
	})
	if !regexp.MustCompile(`(?m)^Bash\(npm test:\*\) +5 +100% +rule:ops \(5\) +npm test`).MatchString(out) || strings.Contains(out, "rm ") {
		t.Errorf("policy suggest:\n%s%s", out, stderr)
	}
	code, out, _ := runCLI("policy", "-c", manifest, "--since", "1d", "-o", "json")
	var s struct {
		Rule      string
		Support   int
		Agreement float64
		Deciders  []struct {
			Decider string
			N       int
		}
	}
	if err := json.Unmarshal([]byte(out), &s); code != exitOK || err != nil || s.Rule != "Bash(npm test:*)" || s.Support != 5 || s.Agreement != 1 || len(s.Deciders) != 1 || s.Deciders[0].N != 5 {
		t.Errorf("policy -o json: exit %d, %q (%v)", code, out, err)
	}
	if code, out, _ := runCLI("policy", "suggest", "-c", manifest, "--since", "1d", "--min-support", "6"); code != exitOK || strings.Contains(out, "npm test") {
		t.Errorf("with --min-support 6, 5 requests are too few: %s", out)
	}

	// A rules file a rule supervisor loads.
	rules := filepath.Join(dir, "rules", "suggested.toml")
	if err := os.Mkdir(filepath.Dir(rules), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI("policy", "suggest", "-c", manifest, "--since", "1d", "-o", "toml", "--write", rules); code != exitOK ||
		!strings.Contains(out, `rule = "Bash(npm test:*)"`) || !strings.Contains(stderr, "1 rules added to "+rules) {
		t.Fatalf("policy suggest --write: exit %d\n%s%s", code, out, stderr)
	}
	f, err := permission.ReadFile(rules)
	if err != nil || !slices.Equal(f.Rules(permission.Allow), []string{"Bash(npm test:*)"}) ||
		!strings.Contains(f.Entries(permission.Allow)[0].Note, "allows 5 past requests, 100% approved (rule:ops 5); e.g. npm test") {
		t.Fatalf("the rules file: %+v (%v)", f, err)
	}
	if code, _, stderr := runCLI("policy", "suggest", "-c", manifest, "--since", "1d", "--write", rules); code != exitOK || !strings.Contains(stderr, "0 rules added to "+rules+" (1 there already)") {
		t.Errorf("policy suggest --write again: exit %d, %s", code, stderr)
	}
	loads := manifest + ".rules.toml"
	if err := os.WriteFile(loads, []byte(strings.Replace(m, `[[routes]]`, "[supervisors.suggested]\nstrategy = \"rule\"\nrules_file = \"rules/suggested.toml\"\n[[routes]]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI("validate", "-c", loads); code != exitOK {
		t.Errorf("a manifest loading the written rules: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("policy", "suggest", "-c", manifest, "--since", "yesterday"); code != exitUsage || !strings.Contains(stderr, "want a duration before now (30d") {
		t.Errorf("--since yesterday: exit %d, %s", code, stderr)
	}

	// Promoted into supervisor learned's rules file on the fleet, audited as ana's.
	if code, _, stderr := runCLI("policy", "suggest", "-c", manifest, "--since", "1d", "--promote", "learned", "--as", "ana"); code != exitOK ||
		!strings.Contains(stderr, "Bash(npm test:*) promoted to learned's rules file on ") || !strings.Contains(stderr, ", as ana") {
		t.Fatalf("policy suggest --promote: exit %d\n%s", code, stderr)
	}
	learned, err := permission.ReadFile(filepath.Join(dir, "learned", "rules.toml"))
	if err != nil || !slices.Equal(learned.Rules(permission.Allow), []string{"Bash(npm test:*)"}) || learned.Entries(permission.Allow)[0].By != "human:ana" ||
		!strings.Contains(learned.Entries(permission.Allow)[0].Note, "allows 5 past requests") {
		t.Fatalf("learned's rules file: %+v (%v)", learned, err)
	}
	proctest.Within(t, 20*time.Second, func() error {
		records, err := readAudit(t, manifest, "learned")
		if err != nil {
			return err
		}
		for _, r := range records {
			if r.Kind == "rule.added" && r.Decider == "human:ana" && r.Text == "Bash(npm test:*)" {
				return nil
			}
		}
		return fmt.Errorf("no rule.added by human:ana in %d records of learned's rules", len(records))
	})
}

// TestPolicyReplay: a scripted agent's approvals are decided by rule supervisor ops
// (npm test yes, rm no) and by ana, who denies a deploy. Replayed with the same
// manifest, nothing changes; with one that lets ops allow deploys, the replay flags
// the deploy ana denied and exits 1; with one that only allows rm, it shows the change
// and exits 0 (no person denied those). The same replay reads an exported audit. A
// shadow that approves everything is shown agreeing on half.
func TestPolicyReplay(t *testing.T) {
	t.Parallel()
	manifest, m, dir := policyNode(t, opsRules+`[supervisors.oncall]
strategy = "human"
[supervisors.optimist]
strategy = "static"
answers = { approval = "yes" }
[[routes]]
type = "approval"
match = "deploy"
supervisor = "oncall"
shadow = "optimist"
[[routes]]
supervisor = "ops"
shadow = "optimist"
`)
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-replayed", "--follow", "w", approvals("npm test", "rm -rf build", "make deploy", "npm test -- --ci"))
	var id string
	proctest.Within(t, 30*time.Second, func() error {
		_, out, _ := runCLI("pending", "-c", manifest, "--json")
		for _, line := range strings.Split(out, "\n") {
			var p struct{ ID, Session string }
			if json.Unmarshal([]byte(line), &p) == nil && p.Session == "t-replayed" {
				id = p.ID
				return nil
			}
		}
		return fmt.Errorf("the deploy is not waiting for a person: %s", out)
	})
	if code, out, stderr := runCLI("respond", "-c", manifest, id, "no", "--as", "ana"); code != exitOK {
		t.Fatalf("respond: exit %d\n%s%s", code, out, stderr)
	}
	if code := follow.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("the session: exit %d\n%s%s", code, follow.stdout, follow.stderr)
	}
	variant := func(name, old, new string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Replace(m, old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cache := t.TempDir()
	replay := func(args ...string) (int, string, string) {
		return runCLI(append([]string{"policy", "replay", "--since", "1d", "--cache", cache}, args...)...)
	}

	proctest.Within(t, 20*time.Second, func() error { // the audit is written as the session goes
		code, out, stderr := replay("-c", manifest)
		if code != exitOK || !strings.Contains(out, "4 requests replayed") || !strings.Contains(out, "     4  same") {
			return fmt.Errorf("replay with the same manifest: exit %d\n%s%s", code, out, stderr)
		}
		return nil
	})
	loose := strings.Replace(strings.Replace(m, "match = \"deploy\"\nsupervisor = \"oncall\"", "match = \"deploy\"\nsupervisor = \"ops\"", 1),
		`match = "^npm test", answer = "yes" }`, `match = "^(npm test|make deploy)", answer = "yes" }`, 1)
	loosePath := filepath.Join(dir, "loose.toml")
	if err := os.WriteFile(loosePath, []byte(loose), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := replay("-c", loosePath)
	if code != exitDangerous || !regexp.MustCompile(`(?m)^ +1  would allow what was denied\n.*t-replayed make deploy: was "no" by human:ana, now "yes" by rule:ops  DANGEROUS$`).MatchString(out) ||
		!strings.Contains(stderr, "would allow 1 requests a person denied") {
		t.Errorf("replay allowing deploys: exit %d\n%s%s", code, out, stderr)
	}
	// With fewer examples than changes, it says how many it left out.
	if _, out, _ := replay("-c", loosePath, "--examples", "0"); !strings.Contains(out, "… and 1 more (--examples 1 shows more; -o json lists every one)") {
		t.Errorf("replay --examples 0 does not say what it left out:\n%s", out)
	}
	rm := variant("rm.toml", `match = "^rm ", answer = "no" }`, `match = "^rm ", answer = "yes" }`)
	if code, out, stderr := replay("-c", rm); code != exitOK || !regexp.MustCompile(`(?m)^ +1  would allow what was denied\n.*rm -rf build: was "no" by rule:ops, now "yes" by rule:ops$`).MatchString(out) {
		t.Errorf("replay allowing rm: exit %d\n%s%s", code, out, stderr)
	}

	// The shadow that approves everything agreed on the two approved, not on the two denied.
	code, out, stderr = runCLI("policy", "shadow", "-c", manifest, "--since", "1d")
	if code != exitOK || !regexp.MustCompile(`(?m)^optimist +4 +2 +2 +0 +50% +2\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)t-replayed +a1 +rm -rf build +"yes" by static:optimist +given "no" by rule:ops$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)t-replayed +a2 +make deploy +"yes" by static:optimist +given "no" by human:ana$`).MatchString(out) {
		t.Errorf("policy shadow: exit %d\n%s%s", code, out, stderr)
	}

	// However low the bar, a shadow that would allow what a person denied is not promoted.
	if code, _, stderr := runCLI("policy", "promote", "-c", manifest, "--since", "1d", "--min-decisions", "0", "--min-agreement", "0", "optimist"); code != exitError ||
		!strings.Contains(stderr, "not promoted: optimist would have allowed 1 approvals a person denied") {
		t.Errorf("promoting a shadow over a person's denial: exit %d, %s", code, stderr)
	}

	// In CI, from an exported audit.
	code, exported, stderr := runCLI("audit", "-c", manifest, "--since", "1h", "-o", "json")
	if code != exitOK {
		t.Fatalf("audit -o json: exit %d, %s", code, stderr)
	}
	file := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	noBus := filepath.Join(dir, "no-bus.toml") // the CI job's copy: no server to reach
	if err := os.WriteFile(noBus, []byte(regexp.MustCompile(`(?s)\[nats\].*?\[hosts`).ReplaceAllString(loose, "[nats]\nurl = \"nats://127.0.0.1:1\"\n[hosts")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := replay("-c", noBus, "--audit", file); code != exitDangerous || !strings.Contains(out, "DANGEROUS") {
		t.Errorf("replay from an exported audit: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := replay("-c", manifest, "--audit", manifest); code != exitError || !strings.Contains(stderr, "line 1 is not an audit record") {
		t.Errorf("replay of a file that is no audit: exit %d, %s", code, stderr)
	}
}

// TestConsolePolicyFromHistory: the console shows how a shadow that approves everything
// agreed with rule supervisor ops (4 of 5) and where not, suggests the rule the approvals
// agree on, and a person promotes it into rule supervisor learned's rules file, audited
// in her name. An agent's markup in its request stays text there.
func TestConsolePolicyFromHistory(t *testing.T) {
	t.Parallel()
	manifest, _, dir := policyNode(t, opsRules+`[supervisors.optimist]
strategy = "static"
answers = { approval = "yes" }
[supervisors.learned]
strategy = "rule"
rules_file = "learned/rules.toml"
[[routes]]
supervisor = "ops"
shadow = "optimist"
`)
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-console-policy", "--follow", "w", approvals("npm test", "npm test -- --ci", "rm -rf build", "npm test", "npm test")); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	con := runtimeProc(t, "console", "-c", manifest, "--addr", fmt.Sprintf("127.0.0.1:%d", proctest.FreePort(t)), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "open the console", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	shadowRow := func(decided string) string {
		t.Helper()
		return get(t, ctx, "optimist's agreement", chromedp.Poll[string](fmt.Sprintf(
			`(r => r && r.cells[1].textContent == %q ? Array.from(r.cells).map(c => c.textContent).join("|") : (loadShadows(), false))(document.querySelector('#shadows tr[data-shadow="optimist"]'))`, decided),
			chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(time.Second)))
	}
	if row := shadowRow("5"); row != "optimist|5|4|1|0|80%|1||not promotable: optimist answered 5 requests, under the 50 a promotion needs: let it shadow longer, or lower the bar" {
		t.Errorf("optimist's row: %q; want 5 decided, 4 agreed, 1 disagreed, 0 without an answer, 80%%, 1 allowing what was denied, not promotable", row)
	}
	if off := text(t, ctx, "#disagreements tbody tr"); !strings.Contains(off, "rm -rf build") || !strings.Contains(off, "yes by static:optimist") || !strings.Contains(off, `given "no" by rule:ops`) {
		t.Errorf("the disagreement: %q", off)
	}
	do(t, ctx, "suggest", chromedp.Click(chromedp.CSS("#suggest")))
	suggested := `#suggestions tr[data-rule="Bash(npm test:*)"]`
	got := get(t, ctx, "the suggestion", chromedp.Poll[string](fmt.Sprintf(`(r => r ? r.textContent : false)(document.querySelector(%q))`, suggested),
		chromedp.WithPollingTimeout(30*time.Second)))
	if !strings.Contains(got, "Bash(npm test:*)4100%rule:ops (4)") {
		t.Errorf("the suggested rule's row: %q", got)
	}
	if refused := text(t, ctx, "#refused"); refused != "" && strings.Contains(refused, "npm test") {
		t.Errorf("refused: %q", refused)
	}
	shot(t, ctx, "policy-1-suggested")
	do(t, ctx, "promote", chromedp.Click(chromedp.CSS(suggested+" button.promote")))
	outcome := get(t, ctx, "promoted", chromedp.Poll[string](fmt.Sprintf(`(o => o && o.textContent ? o.textContent : false)(document.querySelector(%q))`, suggested+" .promote-outcome"),
		chromedp.WithPollingTimeout(30*time.Second)))
	if outcome != "promoted to learned's rules file" {
		t.Fatalf("the promotion: %q", outcome)
	}
	shot(t, ctx, "policy-2-promoted")
	f, err := permission.ReadFile(filepath.Join(dir, "learned", "rules.toml"))
	if err != nil || !slices.Equal(f.Rules(permission.Allow), []string{"Bash(npm test:*)"}) || f.Entries(permission.Allow)[0].By != "human:ana" ||
		!strings.Contains(f.Entries(permission.Allow)[0].Note, "allows 4 past requests, 100% approved (rule:ops 4)") {
		t.Fatalf("learned's rules file: %+v (%v)", f, err)
	}

	// Fifty more approvals that optimist agrees with: it clears the bar, and a person
	// promotes it; the node decides ops' route by it from then on. Then she demotes it.
	var fifty []string
	for range 50 {
		fifty = append(fifty, "npm test")
	}
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-fifty", "--follow", "w", approvals(fifty...)); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	if row := shadowRow("55"); !strings.HasPrefix(row, "optimist|55|54|1|0|98%|1||Promote") {
		t.Fatalf("optimist's row after 55 decisions: %q", row)
	}
	do(t, ctx, "promote optimist", chromedp.Click(chromedp.CSS(`#shadows tr[data-shadow="optimist"] button.promote`)))
	said := get(t, ctx, "the promotion", chromedp.Poll[string](`(o => o.textContent || false)(document.getElementById("shadows-outcome"))`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if said != "optimist promoted: routes[0]: ops → optimist" {
		t.Fatalf("the promotion said %q", said)
	}
	promoted := get(t, ctx, "optimist promoted", chromedp.Poll[string](`(c => c && c.textContent || false)(document.querySelector('#shadows tr[data-shadow="optimist"] td.promoted'))`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if !strings.HasPrefix(promoted, "by ana ") {
		t.Errorf("the promoted cell: %q", promoted)
	}
	shot(t, ctx, "policy-3-shadow-promoted")
	proctest.Within(t, 20*time.Second, func() error {
		id := "t-promoted-" + nuid.Next()
		if code, out, stderr := runCLI("submit", "-c", manifest, "--id", id, "--follow", "w", approvals("rm -rf dist")); code != exitOK {
			t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
		}
		if a := auditAnswer(t, manifest, id, "a0"); a.Decider != "static:optimist" {
			return fmt.Errorf("rm answered %s by %s; want yes by static:optimist", a.Value, a.Decider)
		}
		return nil
	})
	do(t, ctx, "demote optimist", chromedp.Click(chromedp.CSS(`#shadows tr[data-shadow="optimist"] button.demote`)))
	said = get(t, ctx, "the demotion", chromedp.Poll[string](`(o => o.textContent == "optimist demoted" ? o.textContent : false)(document.getElementById("shadows-outcome"))`,
		chromedp.WithPollingTimeout(30*time.Second)))
	code, out, stderr := runCLI("audit", "-c", manifest, "--kind", "shadow.demoted", "--since", "1h", "-o", "json")
	var demoted wire.AuditRecord
	if code != exitOK || json.Unmarshal([]byte(out), &demoted) != nil || demoted.Decider != "human:ana" {
		t.Errorf("the demotion's audit record: exit %d\n%s%s", code, out, stderr)
	}

	// An agent's request is shown as text on the policy views, never run as markup.
	evil := `rm -rf "<img src=x onerror=document.title='owned'>"`
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-markup", "--follow", "w", approvals(evil)); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	shown := get(t, ctx, "the markup's disagreement", chromedp.Poll[string](
		`(r => r ? r.textContent : (loadShadows(), false))(document.querySelector('#disagreements tr[data-session="t-markup"][data-request="a0"]'))`,
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(time.Second)))
	if !strings.Contains(shown, evil) {
		t.Errorf("the disagreement shows %q; want the request's text as it was", shown)
	}
	if n := get(t, ctx, "images", chromedp.Evaluate[int](`document.querySelectorAll("#policy img").length`)); n != 0 || get(t, ctx, "title", chromedp.Evaluate[string](`document.title`)) == "owned" {
		t.Errorf("the agent's markup ran on the page: %d images", n)
	}
}

// TestPolicyPromoteShadow: a shadow that approves everything agrees with rule supervisor
// ops on four of five requests (it would allow the rm that ops denied). Under the
// default bar it is not promoted; under one it clears, it is, in the caller's name: the
// running node decides its route by it from then on, with ops shadowing it, and says
// so in policy shadow and the audit. Demoted, ops decides again.
func TestPolicyPromoteShadow(t *testing.T) {
	t.Parallel()
	manifest, _, _ := policyNode(t, opsRules+`[supervisors.optimist]
strategy = "static"
answers = { approval = "yes" }
[[routes]]
supervisor = "ops"
shadow = "optimist"
`)
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-before", "--follow", "w", approvals("npm test", "npm test -- --ci", "rm -rf build", "npm test", "npm test")); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	promote := func(args ...string) (int, string, string) {
		return runCLI(append([]string{"policy", "promote", "-c", manifest, "--since", "1d", "--as", "ana"}, args...)...)
	}
	if code, _, stderr := promote("ops"); code != exitError || !strings.Contains(stderr, "ops made no shadow decisions since") {
		t.Errorf("promoting ops, no route's shadow: exit %d, %s", code, stderr)
	}
	proctest.Within(t, 20*time.Second, func() error { // the shadow records are written as the session goes
		code, _, stderr := promote("optimist")
		if code != exitError || !strings.Contains(stderr, "not promoted: optimist answered 5 requests, under the 50 a promotion needs") {
			return fmt.Errorf("promoting under the default bar: exit %d, %s", code, stderr)
		}
		return nil
	})
	if code, _, stderr := promote("--min-decisions", "5", "optimist"); code != exitError || !strings.Contains(stderr, "optimist agreed on 80.0% of 5 answers, under the 95.0%") {
		t.Errorf("promoting under 95%% agreement: exit %d, %s", code, stderr)
	}
	code, out, stderr := promote("--min-decisions", "5", "--min-agreement", "0.8", "--note", "rm is fine here", "optimist")
	if code != exitOK || !strings.Contains(out, "optimist promoted by ana, agreeing 80.0% of 5 answers; on node ") || !strings.Contains(out, "routes[0]: ops → optimist") {
		t.Fatalf("promote: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := promote("--min-decisions", "5", "--min-agreement", "0.8", "optimist"); code != exitError || !strings.Contains(stderr, "optimist was promoted already, by human:ana at ") {
		t.Errorf("promoting twice: exit %d, %s", code, stderr)
	}

	// The node applies it as it sees it: a new session's rm is allowed by optimist.
	var answer *wire.AuditRecord
	proctest.Within(t, 20*time.Second, func() error {
		id := "t-after-" + nuid.Next()
		if code, out, stderr := runCLI("submit", "-c", manifest, "--id", id, "--follow", "w", approvals("rm -rf build")); code != exitOK {
			t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
		}
		answer = auditAnswer(t, manifest, id, "a0")
		if answer.Decider != "static:optimist" {
			return fmt.Errorf("rm answered %s by %s; want yes by static:optimist", answer.Value, answer.Decider)
		}
		return nil
	})
	if string(answer.Value) != `"yes"` {
		t.Errorf("rm answered %s by optimist", answer.Value)
	}
	proctest.Within(t, 20*time.Second, func() error {
		code, out, stderr := runCLI("policy", "shadow", "-c", manifest, "--since", "1d")
		if code != exitOK || !regexp.MustCompile(`(?m)^ops +1 +0 +1 +0 +0% +0 +\n`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^optimist +5 +4 +1 +0 +80% +1 +ana 20\d\d-\d\d-\d\d \d\d:\d\d\n`).MatchString(out) {
			return fmt.Errorf("policy shadow: exit %d\n%s%s", code, out, stderr)
		}
		return nil
	})
	code, out, stderr = runCLI("audit", "-c", manifest, "--kind", "shadow.promoted", "--since", "1h", "-o", "json")
	var promoted wire.AuditRecord
	if code != exitOK || json.Unmarshal([]byte(out), &promoted) != nil || promoted.Decider != "human:ana" || promoted.Reason != "rm is fine here" ||
		promoted.Text != "shadow optimist promoted by ana, agreeing 80.0% of 5 decisions: routes[0]: ops → optimist" {
		t.Errorf("the promotion's audit record: exit %d\n%s%s", code, out, stderr)
	}

	if code, out, stderr := runCLI("policy", "demote", "-c", manifest, "--as", "bo", "optimist"); code != exitOK || !strings.Contains(out, "optimist demoted by bo (promoted by human:ana)") {
		t.Fatalf("demote: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("policy", "demote", "-c", manifest, "--as", "bo", "optimist"); code != exitError || !strings.Contains(stderr, "optimist is not promoted") {
		t.Errorf("demoting twice: exit %d, %s", code, stderr)
	}
	proctest.Within(t, 20*time.Second, func() error {
		id := "t-demoted-" + nuid.Next()
		if code, out, stderr := runCLI("submit", "-c", manifest, "--id", id, "--follow", "w", approvals("rm -rf build")); code != exitOK {
			t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
		}
		if a := auditAnswer(t, manifest, id, "a0"); a.Decider != "rule:ops" || string(a.Value) != `"no"` {
			return fmt.Errorf("after the demotion, rm answered %s by %s; want no by rule:ops", a.Value, a.Decider)
		}
		return nil
	})
}

// auditAnswer is the answer the audit keeps for request of session, once it has one.
func auditAnswer(t *testing.T, manifest, session, request string) *wire.AuditRecord {
	t.Helper()
	var found *wire.AuditRecord
	proctest.Within(t, 20*time.Second, func() error {
		code, out, stderr := runCLI("audit", "-c", manifest, session, "-o", "json")
		if code != exitOK {
			return fmt.Errorf("audit: exit %d, %s", code, stderr)
		}
		for _, line := range strings.Split(out, "\n") {
			var r wire.AuditRecord
			if json.Unmarshal([]byte(line), &r) == nil && r.Request == request && r.Kind == "answer" {
				found = &r
				return nil
			}
		}
		return fmt.Errorf("no answer to %s in session %s's audit:\n%s", request, session, out)
	})
	return found
}
