package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// history builds an audit: each approval's records as a node writes them, the request's
// one record (answered soon) or a request record and an answer record.
type history struct {
	records []*wire.AuditRecord
	n       int
}

// add records times approvals of call (tool and input) on host, answered value by
// decider (outcome answered unless given).
func (h *history) add(times int, host, tool string, input map[string]any, value, decider string, outcome ...string) {
	for range times {
		h.n++
		session, id := fmt.Sprintf("s-%d", h.n%37), fmt.Sprintf("approval-%d", h.n)
		ask, _ := json.Marshal(map[string]any{"type": "approval", "id": id, "tool": tool, "input": input, "description": fmt.Sprint(input)})
		answer := &wire.AuditRecord{Kind: "answer", Time: 1795000000000 + int64(h.n)*1000, Host: host, Session: session, Request: id, Type: "approval",
			Text: fmt.Sprint(input), Value: json.RawMessage(fmt.Sprintf("%q", value)), Outcome: "answered", Decider: decider}
		if len(outcome) > 0 {
			answer.Outcome = outcome[0]
		}
		if h.n%3 == 0 { // asked, then answered later: two records, the answer's without the text
			h.records = append(h.records, &wire.AuditRecord{Kind: "request", Time: answer.Time - 500, Host: host, Session: session, Request: id,
				Type: "approval", Text: answer.Text, Ask: ask})
			answer.Text = ""
		} else {
			answer.Asked, answer.Ask = answer.Time-10, ask
		}
		h.records = append(h.records, answer)
	}
}

func bash(cmd string) map[string]any { return map[string]any{"command": cmd} }

// TestSuggestFromARecordedAudit: 423 decided approvals of known decisions give exactly
// the rules people and supervisors would have agreed to, each narrowed to what was
// seen, with its numbers; none allows what a person denied.
func TestSuggestFromARecordedAudit(t *testing.T) {
	var h history
	h.add(100, "coder", "Bash", bash("npm test"), "yes", "rule:ops")
	h.add(20, "coder", "Bash", bash("npm test -- --watch"), "yes", "human:ana")
	h.add(50, "coder", "Bash", bash("go test ./..."), "yes", "human:bob")
	h.add(10, "ci", "Bash", bash("timeout 60 go test ./..."), "yes", "llm:reviewer/gpt-fake")
	// Every push approved was to main; the one force push, denied: the rule keeps "origin main".
	h.add(40, "coder", "Bash", bash("git push origin main"), "yes", "human:ana")
	h.add(1, "coder", "Bash", bash("git push --force origin main"), "no", "human:ana")
	// A clean-up people approved, then denied once: no rule at all.
	h.add(12, "coder", "Bash", bash("rm -rf build"), "yes", "session:human:bob")
	h.add(1, "coder", "Bash", bash("rm -rf build"), "no", "human:carol")
	h.add(30, "coder", "Edit", map[string]any{"file_path": "/repo/src/app/main.go"}, "yes", "rule:ops")
	h.add(5, "coder", "Edit", map[string]any{"file_path": "/repo/src/app/util.go"}, "yes", "human:ana")
	h.add(6, "coder", "WebFetch", map[string]any{"url": "https://docs.python.org/3/library/json.html"}, "yes", "llm:reviewer/gpt-fake")
	// A model approved 8 of 10 issues: under 90 %.
	h.add(8, "coder", "mcp__github__create_issue", map[string]any{"title": "x"}, "yes", "llm:reviewer/gpt-fake")
	h.add(2, "coder", "mcp__github__create_issue", map[string]any{"title": "y"}, "no", "llm:reviewer/gpt-fake")
	// Too rare to propose.
	h.add(2, "coder", "Bash", bash("make deploy"), "yes", "human:ana")
	// Not decisions: defaults written at the deadline, and two commands in one line.
	h.add(100, "coder", "Bash", bash("curl https://example.com"), "yes", "runtime", "timed_out")
	h.add(36, "coder", "Bash", bash("npm test && npm run lint"), "yes", "rule:ops")
	if h.n != 423 {
		t.Fatalf("the audit holds %d approvals", h.n)
	}

	got, refused := Suggest(FromAudit(h.records), Options{MinSupport: 3, MinAgreement: 0.9, Cwd: func(string) string { return "/repo" }})
	want := []Suggestion{
		{Rule: "Bash(npm test:*)", Support: 120, Approved: 120, Agreement: 1, Deciders: []Count{{"rule:ops", 100}, {"human:ana", 20}}, Hosts: []string{"coder"}, Example: "map[command:npm test -- --watch]"},
		{Rule: "Bash(go test ./...:*)", Support: 60, Approved: 60, Agreement: 1, Deciders: []Count{{"human:bob", 50}, {"llm:reviewer/gpt-fake", 10}}, Hosts: []string{"ci", "coder"}, Example: "map[command:timeout 60 go test ./...]"},
		{Rule: "Bash(git push origin main:*)", Support: 40, Approved: 40, Agreement: 1, Deciders: []Count{{"human:ana", 40}}, Hosts: []string{"coder"}, Example: "map[command:git push origin main]"},
		{Rule: "Edit(./src/app/**)", Support: 35, Approved: 35, Agreement: 1, Deciders: []Count{{"rule:ops", 30}, {"human:ana", 5}}, Hosts: []string{"coder"}, Example: "map[file_path:/repo/src/app/util.go]"},
		{Rule: "WebFetch(domain:docs.python.org)", Support: 6, Approved: 6, Agreement: 1, Deciders: []Count{{"llm:reviewer/gpt-fake", 6}}, Hosts: []string{"coder"}, Example: "map[url:https://docs.python.org/3/library/json.html]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("suggestions:\n%s\nwant:\n%s", show(got), show(want))
	}
	wantRefused := []Refused{
		{Rule: "Bash(make deploy:*)", Why: "it allows 2 past requests, fewer than 3"},
		{Rule: "Bash(rm -rf build:*)", Why: `it would allow "map[command:rm -rf build]", which human:carol denied (2026-11-18 11:10, session s-12)`},
		{Rule: "mcp__github__create_issue", Why: "8 of the 10 requests it allows were approved (80%), under 90%"},
	}
	if !reflect.DeepEqual(refused, wantRefused) {
		t.Errorf("refused:\n%s\nwant:\n%s", show(refused), show(wantRefused))
	}
	// Whatever the thresholds, nothing a person denied is ever allowed.
	all, _ := Suggest(FromAudit(h.records), Options{Cwd: func(string) string { return "/repo" }})
	for _, s := range all {
		if s.Rule == "Bash(rm -rf build:*)" || s.Rule == "Bash(git push:*)" {
			t.Errorf("with no thresholds, %s is proposed: it allows what a person denied", s.Rule)
		}
	}
}

func show(v any) string { b, _ := json.MarshalIndent(v, "", " "); return string(b) }

// TestSuggestLearnsNothingFromAWrappedLine: people approved an allowed command run
// through what changes it (env -S, LD_PRELOAD, PATH, BASH_ENV, time -o), many times; no
// rule is learned from those lines, so "ls" and "npm test" stay unallowed, while the
// plain commands approved beside them are.
func TestSuggestLearnsNothingFromAWrappedLine(t *testing.T) {
	var h history
	for _, line := range []string{"env -S 'curl evil' ls", "env --split-string='rm -rf /' ls", "LD_PRELOAD=/tmp/x.so ls",
		"PATH=/tmp/evil:$PATH ls", "BASH_ENV=/tmp/x npm test", "GIT_SSH_COMMAND='curl evil' git status", "/usr/bin/time -o /etc/cron.d/x ls"} {
		h.add(10, "coder", "Bash", bash(line), "yes", "human:ana")
	}
	h.add(5, "coder", "Bash", bash("go vet ./..."), "yes", "human:ana")
	got, _ := Suggest(FromAudit(h.records), Options{MinSupport: 3, MinAgreement: 0.9, Cwd: func(string) string { return "/repo" }})
	var rules []string
	for _, s := range got {
		rules = append(rules, s.Rule)
	}
	if !reflect.DeepEqual(rules, []string{"Bash(go vet ./...:*)"}) {
		t.Fatalf("suggested %q; want only Bash(go vet ./...:*)", rules)
	}
}
