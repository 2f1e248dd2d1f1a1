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

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/permission"
)

// TestPolicySuggestFromTheFleetsAudit: sessions of a scripted agent ask approvals that
// rule supervisor ops decides; agentmux policy suggest reads them back from the audit
// (each with the tool call it asked) and proposes the rule they agree on, as a table,
// as JSON and as a rules file, and writes it where a rule supervisor loads it.
func TestPolicySuggestFromTheFleetsAudit(t *testing.T) {
	dir := t.TempDir()
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[hosts.w]
command = %q
args = ["sim"]
env = { AGENTMUX_RUNTIME_MAIN = "1" }
stop_grace = "2s"
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^npm test", answer = "yes" }, { type = "approval", match = "^rm ", answer = "no" }]
[[routes]]
supervisor = "ops"
`, proctest.FreePort(t), filepath.Join(dir, "store"), os.Args[0])
	manifest := filepath.Join(dir, "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest)
	until(t, "agentmux up", up.stderr, "node up")
	var steps []string
	for i, cmd := range []string{"npm test", "npm test -- --ci", "npm test", "rm -rf /tmp/x", "npm test -- --ci", "rm -rf build", "npm test"} {
		steps = append(steps, fmt.Sprintf(`{"send":{"type":"approval","id":"a%d","tool":"Bash","input":{"command":%q},"description":%q}},{"await":"a%d"}`, i, cmd, cmd, i))
	}
	if code, out, stderr := runCLI("submit", "-c", manifest, "--id", "t-history", "--follow", "w", `{"steps":[`+strings.Join(steps, ",")+`,{"result":"done"}]}`); code != exitOK {
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
	if err := os.WriteFile(loads, []byte(strings.Replace(m, `[[routes]]`, "[supervisors.learned]\nstrategy = \"rule\"\nrules_file = \"rules/suggested.toml\"\n[[routes]]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI("validate", "-c", loads); code != exitOK {
		t.Errorf("a manifest loading the written rules: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("policy", "suggest", "-c", manifest, "--since", "yesterday"); code != exitUsage || !strings.Contains(stderr, "want a duration before now (30d") {
		t.Errorf("--since yesterday: exit %d, %s", code, stderr)
	}
}
