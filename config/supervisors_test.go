package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const strategies = `
[connections.openai]
provider = "openai"
api_key_env = "OPENAI_API_KEY"
default_model = "gpt-4.1-mini"
models = { smart = "gpt-4.1" }
[connections.local]
provider = "ollama"
base_url = "http://127.0.0.1:11434/v1"
[supervisors.architect]
strategy = "llm"
connection = "openai"
model = "smart"
system_prompt = "You review code changes."
temperature = 0.2
memory = "session"
fallback = "rules"
escalate = { to = "oncall", when = "(?i)prod", risk_level = ["high", "critical"] }
[supervisors.rules]
strategy = "rule"
rules = [{ match = ".", answer = "ok" }]
[supervisors.script]
strategy = "command"
command = "python3"
args = ["decide.py"]
working_dir = "bin"
timeout = "2s"
[supervisors.oncall]
strategy = "human"
[tools.lookup_user]
command = "python3"
args = ["lookup.py"]
[tools.remote]
description = "served by another process"
[[routes]]
type = "tool_call"
supervisor = "architect"
post_process = true
`

func TestStrategiesToolsAndConnections(t *testing.T) {
	m, err := Parse("/etc/agentmux/m.toml", []byte(strategies))
	if err != nil {
		t.Fatal(err)
	}
	a := m.Supervisors["architect"]
	if a.ModelID != "gpt-4.1" || a.Conn.Name != "openai" || a.MaxTokens != DefaultMaxTokens || *a.Temperature != 0.2 {
		t.Fatalf("llm supervisor resolved to %+v", a)
	}
	if a.Escalate.Re == nil || !a.Escalate.Re.MatchString("deploy to PROD") {
		t.Fatalf("escalate.when not compiled: %+v", a.Escalate)
	}
	if got := m.Supervisors["script"]; got.WorkingDir != "/etc/agentmux/bin" || got.Timeout.D().Seconds() != 2 {
		t.Fatalf("command supervisor %+v", got)
	}
	if m.Tools["lookup_user"].Timeout.D() != DefaultToolTimeout || !m.Routes[0].PostProcess {
		t.Fatalf("tool defaults or post_process lost")
	}
}

func TestStrategyProblems(t *testing.T) {
	for _, c := range []struct{ manifest, want string }{
		{"[supervisors.a]\nstrategy = \"llm\"\n", "an llm supervisor needs a connection"},
		{"[supervisors.a]\nstrategy = \"llm\"\nconnection = \"nope\"\n", `no connection "nope"`},
		{"[connections.c]\nprovider = \"openai\"\n[supervisors.a]\nstrategy = \"llm\"\nconnection = \"c\"\n", "no model: set model here or default_model"},
		{"[connections.c]\nprovider = \"palm\"\n", `unknown provider "palm"`},
		{"[connections.c]\nprovider = \"openai\"\ndefault_model = \"m\"\n[supervisors.a]\nstrategy = \"llm\"\nconnection = \"c\"\ntemperature = 3.0\n", "3 is out of range"},
		{"[connections.c]\nprovider = \"openai\"\ndefault_model = \"m\"\n[supervisors.a]\nstrategy = \"llm\"\nconnection = \"c\"\nmemory = \"forever\"\n", `"forever" is not a memory mode`},
		{"[supervisors.a]\nstrategy = \"command\"\n", "a command supervisor needs a command"},
		{"[supervisors.a]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1 }]\nfallback = \"b\"\n[supervisors.b]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1 }]\nfallback = \"a\"\n", "fallbacks form a cycle"},
		{"[supervisors.a]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1 }]\nfallback = \"ext\"\n[supervisors.ext]\nstrategy = \"external\"\n", "is external; a fallback runs in this process"},
		{"[supervisors.a]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1 }]\nescalate = { to = \"b\", when = \"x\" }\n[supervisors.b]\nstrategy = \"static\"\nanswers = { question = 1 }\n", "escalate to a human supervisor"},
		{"[supervisors.a]\nstrategy = \"rule\"\nrules = [{ match = \"x\", answer = 1 }]\nescalate = { to = \"h\", risk_level = [\"high\"] }\n[supervisors.h]\nstrategy = \"human\"\n", "only an llm supervisor rates risk"},
		{"[supervisors.h]\nstrategy = \"human\"\nescalate = { to = \"h\", when = \"x\" }\n", "escalate works on llm and rule supervisors"},
		{"[supervisors.a]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"a\"\npost_process = true\n", "post_process needs an llm supervisor"},
		{"[supervisors.a]\nstrategy = \"oracle\"\n", `unknown strategy "oracle"`},
		{"[supervisors.a]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"a\"\nshadow = \"nope\"\n", `no supervisor "nope"`},
		{"[supervisors.a]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"a\"\nshadow = \"a\"\n", "is the route's supervisor: a shadow is another supervisor"},
		{"[supervisors.a]\nstrategy = \"static\"\nanswers = { question = 1 }\n[supervisors.h]\nstrategy = \"human\"\n[[routes]]\nsupervisor = \"a\"\nshadow = \"h\"\n", "would hand requests to a person, who would answer in vain"},
	} {
		_, err := Parse("m.toml", []byte(c.manifest))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("manifest:\n%s\ngot %v; want %q", c.manifest, err, c.want)
		}
	}
}

// TestRulesFile: a rule supervisor's rules file adds its rules to the manifest's, from
// a path relative to the manifest; a missing file is no rules yet; a file that does
// not read, or a rules file on another strategy, is refused by name.
func TestRulesFile(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentmux.toml")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const sup = "[supervisors.policy]\nstrategy = \"rule\"\ndeny = [\"Bash(rm:*)\"]\nrules_file = \"policy.rules.toml\"\n"
	write(manifest, sup)
	m, err := Load(manifest)
	if err != nil {
		t.Fatalf("a rules file not written yet: %v; want no rules from it", err)
	}
	if p := m.Supervisors["policy"]; p.RulesPath != filepath.Join(dir, "policy.rules.toml") || len(p.Permissions.Allow) != 0 {
		t.Fatalf("rules path %q, allow %d", p.RulesPath, len(p.Permissions.Allow))
	}
	write(filepath.Join(dir, "policy.rules.toml"), "allow = [\"Bash(npm test:*)\"]\n[[deny]]\nrule = \"Bash(git push:*)\"\nby = \"human:ana\"\n")
	if m, err = Load(manifest); err != nil {
		t.Fatal(err)
	}
	p := m.Supervisors["policy"].Permissions
	if len(p.Allow) != 1 || p.Allow[0].Text != "Bash(npm test:*)" || len(p.Deny) != 2 || p.Deny[1].Text != "Bash(git push:*)" {
		t.Fatalf("allow %v, deny %v; want the file's rules after the manifest's", p.Allow, p.Deny)
	}
	write(filepath.Join(dir, "policy.rules.toml"), "allow = [\"Bash(npm test\"]\n")
	if _, err := Load(manifest); err == nil || !strings.Contains(err.Error(), "supervisors.policy.rules_file") || !strings.Contains(err.Error(), "not a permission rule") {
		t.Errorf("a rule that does not parse: %v; want an error at supervisors.policy.rules_file", err)
	}
	write(manifest, "[supervisors.h]\nstrategy = \"human\"\nrules_file = \"policy.rules.toml\"\n")
	if _, err := Load(manifest); err == nil || !strings.Contains(err.Error(), "only a rule supervisor") {
		t.Errorf("a rules file on a human supervisor: %v; want it refused", err)
	}
}
