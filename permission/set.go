package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// is denied or asked about when one of its commands is, and allowed when each is.
func (s *Set) Decide(c Call, cwd string) (Verdict, *Rule) {
	if c.Cwd != "" {
		cwd = c.Cwd
	}
	parts := []string{""}
	if c.Tool == "Bash" {
		parts = commands(c.Command)
	}
	for _, l := range []struct {
		v     Verdict
		rules []*Rule
	}{{Deny, s.Deny}, {Ask, s.Ask}} {
		for _, part := range parts {
			for _, r := range l.rules {
				if r.matches(c, part, cwd) {
					return l.v, r
				}
			}
		}
	}
	var last *Rule
	for _, part := range parts {
		found := false
		for _, r := range s.Allow {
			if r.matches(c, part, cwd) {
				found, last = true, r
				break
			}
		}
		if !found {
			return None, nil
		}
	}
	return Allow, last
}
