package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Verdict is what a Set says of a call.
type Verdict string

// Verdicts, in the order rules are checked.
const (
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
	Allow Verdict = "allow"
	None  Verdict = "" // no rule covers it
)

// Set is a supervisor's permission rules.
type Set struct {
	Deny, Ask, Allow []*Rule
	// Home is where a shell line's "~/x" leads (the Paths rules were added with).
	Home string
}

// Settings is the part of a Claude Code settings file (.claude/settings.json) that
// holds its permission rules.
type Settings struct {
	Permissions struct {
		Allow []string `json:"allow"`
		Ask   []string `json:"ask"`
		Deny  []string `json:"deny"`
	} `json:"permissions"`
}

// Add parses rules into the set's list for v, resolving paths with p.
func (s *Set) Add(v Verdict, rules []string, p Paths) error {
	if s.Home == "" {
		s.Home = p.Home
	}
	for _, text := range rules {
		r, err := Parse(text, p)
		if err != nil {
			return err
		}
		switch v {
		case Deny:
			s.Deny = append(s.Deny, r)
		case Ask:
			s.Ask = append(s.Ask, r)
		default:
			s.Allow = append(s.Allow, r)
		}
	}
	return nil
}

// Import adds the rules of a Claude Code settings file as they are; its "/x" paths
// start at the project the file belongs to (the folder holding .claude).
func (s *Set) Import(path string, home string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var st Settings
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("%s is not a Claude Code settings file: %w", path, err)
	}
	if s.Home == "" {
		s.Home = home
	}
	root := filepath.Dir(path)
	if filepath.Base(root) == ".claude" {
		root = filepath.Dir(root)
	}
	p := Paths{Root: root, Home: home}
	for _, l := range []struct {
		v     Verdict
		rules []string
	}{{Deny, st.Permissions.Deny}, {Ask, st.Permissions.Ask}, {Allow, st.Permissions.Allow}} {
		if err := s.Add(l.v, l.rules, p); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// Empty reports whether the set has no rules.
func (s *Set) Empty() bool { return s == nil || len(s.Deny)+len(s.Ask)+len(s.Allow) == 0 }

// Decide checks deny rules, then ask, then allow, and returns the verdict with the rule
// that decided it. cwd is the agent's working folder, for relative paths. A shell line
// is judged by what it runs (shell.go): denied or asked about when one of its commands
// or files is, asked about when a part of it cannot be known, and allowed when each
// command and each file it writes is.
func (s *Set) Decide(c Call, cwd string) (Verdict, *Rule) {
	if c.Cwd != "" {
		cwd = c.Cwd
	}
	if c.Tool == "Bash" {
		return s.decideShell(c, cwd)
	}
	for _, l := range []struct {
		v     Verdict
		rules []*Rule
	}{{Deny, s.Deny}, {Ask, s.Ask}, {Allow, s.Allow}} {
		for _, r := range l.rules {
			if r.matches(c, "", cwd) {
				return l.v, r
			}
		}
	}
	return None, nil
}

// decideShell judges a shell line by the commands it runs and the files it touches.
func (s *Set) decideShell(c Call, cwd string) (Verdict, *Rule) {
	line, err := parseShell(c.Command)
	if err != nil {
		for _, r := range s.Deny {
			if r.matches(c, c.Command, cwd) {
				return Deny, r
			}
		}
		return Ask, &Rule{Text: "a shell line that does not parse (" + err.Error() + ")", Tool: "Bash"}
	}
	if len(line.commands) == 0 && len(line.writes) == 0 {
		line.commands = []shellCommand{{text: "", allowable: []string{""}}}
	}
	for _, l := range []struct {
		v     Verdict
		rules []*Rule
	}{{Deny, s.Deny}, {Ask, s.Ask}} {
		if r := s.firstShell(l.rules, c, line, cwd); r != nil {
			return l.v, r
		}
	}
	if len(line.unknown) > 0 {
		return Ask, &Rule{Text: "a shell line not every part of which is known: " + strings.Join(line.unknown, "; "), Tool: "Bash"}
	}
	var last *Rule
	for _, cmd := range line.commands {
		if cmd.script {
			continue // its script's commands are judged on their own
		}
		r := firstMatch(s.Allow, c, cmd.allowable, cwd)
		if r == nil {
			return None, nil
		}
		last = r
	}
	for _, path := range line.writes {
		if discard(path) {
			continue
		}
		r := firstFile(s.Allow, "Write", s.expandHome(path), cwd)
		if r == nil {
			return None, nil
		}
		last = r
	}
	if last == nil {
		return None, nil // nothing a rule names: sh -c '' and the like
	}
	return Allow, last
}

// firstShell is the first of rules that covers a command of line, anything one of its
// wrappers runs, or a file it writes or reads.
func (s *Set) firstShell(rules []*Rule, c Call, line *shellLine, cwd string) *Rule {
	for _, cmd := range line.commands {
		if r := firstMatch(rules, c, append([]string{cmd.text}, cmd.inner...), cwd); r != nil {
			return r
		}
	}
	for _, f := range []struct {
		tool  string
		paths []string
	}{{"Write", line.writes}, {"Read", line.reads}} {
		for _, path := range f.paths {
			if r := firstFile(rules, f.tool, s.expandHome(path), cwd); r != nil {
				return r
			}
		}
	}
	return nil
}

// firstMatch is the first of rules that covers c with one of texts as its command.
func firstMatch(rules []*Rule, c Call, texts []string, cwd string) *Rule {
	for _, r := range rules {
		for _, text := range texts {
			if r.matches(c, text, cwd) {
				return r
			}
		}
	}
	return nil
}

// firstFile is the first of rules that covers tool on path: a redirection is the file
// tool it stands for.
func firstFile(rules []*Rule, tool, path, cwd string) *Rule {
	f := Call{Tool: tool, Path: path}
	for _, r := range rules {
		if r.Tool != "Bash" && r.matches(f, "", cwd) {
			return r
		}
	}
	return nil
}

// expandHome turns "~" and "~/x" into the home folder's paths, as the shell does.
func (s *Set) expandHome(path string) string {
	switch {
	case path == "~" && s.Home != "":
		return s.Home
	case strings.HasPrefix(path, "~/") && s.Home != "":
		return filepath.Join(s.Home, path[2:])
	}
	return path
}

// discard reports whether writing path writes no file: /dev/null and the process's own
// standard streams.
func discard(path string) bool {
	return path == "/dev/null" || path == "/dev/stdout" || path == "/dev/stderr" || strings.HasPrefix(path, "/dev/fd/")
}
