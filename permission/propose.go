package permission

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// subcommand is a word a command's rule keeps after the command's name: "npm run
// build", "git status", "go test"; an option, a path or a value ends the prefix.
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// maxSubcommands is how many such words a proposed Bash prefix keeps.
const maxSubcommands = 2

// Propose is the narrowest rules that still cover c beyond this one call, for a person
// to read and edit before saving them ("always for this rule"): a shell line's
// commands by name and subcommands ("Bash(npm run build:*)"), with an Edit rule for each
// file it writes; a file tool's folder ("Edit(./src/**)", or the one file at the root of
// cwd); a fetch's domain; an MCP tool or any other tool by name. It errs when no
// allow rule could cover the call: a shell line that does not parse, or a part of which
// is not plain text.
func Propose(c Call, cwd string) ([]string, error) {
	if c.Cwd != "" {
		cwd = c.Cwd
	}
	switch {
	case c.Tool == "Bash":
		return proposeShell(c.Command, cwd)
	case fileTools[c.Tool] != "" && c.Path != "":
		return []string{fileRule(fileTool(c.Tool), c.Path, cwd, true)}, nil
	case c.Tool == "WebFetch" && c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("the URL %q names no host a rule could", c.URL)
		}
		return []string{"WebFetch(domain:" + strings.ToLower(u.Hostname()) + ")"}, nil
	}
	return []string{c.Tool}, nil
}

// fileTool is the rule tool that covers a file tool: Edit every tool that edits, Read
// every one that reads.
func fileTool(tool string) string {
	if fileTools[tool] == "edit" {
		return "Edit"
	}
	return "Read"
}

// fileRule names path for tool: its folder below cwd ("./src/**"), the file itself at
// cwd's root or when one file is wanted, or its folder by absolute path ("//etc/x/**")
// outside cwd.
func fileRule(tool, path, cwd string, folder bool) string {
	if !filepath.IsAbs(path) && cwd != "" {
		path = filepath.Join(cwd, path)
	}
	path = filepath.Clean(path)
	if rel, err := filepath.Rel(cwd, path); cwd != "" && err == nil && !strings.HasPrefix(rel, "..") {
		dir := filepath.Dir(rel)
		if !folder || dir == "." {
			return tool + "(./" + filepath.ToSlash(rel) + ")"
		}
		return tool + "(./" + filepath.ToSlash(dir) + "/**)"
	}
	if !folder {
		return tool + "(/" + filepath.ToSlash(path) + ")"
	}
	return tool + "(/" + filepath.ToSlash(filepath.Dir(path)) + "/**)"
}

func proposeShell(command, cwd string) ([]string, error) {
	line, err := parseShell(command)
	if err != nil {
		return nil, fmt.Errorf("the shell line does not parse (%v), so no rule can allow it", err)
	}
	if len(line.unknown) > 0 {
		return nil, fmt.Errorf("no rule can allow this shell line: %s", strings.Join(line.unknown, "; "))
	}
	var out []string
	add := func(rule string) {
		for _, r := range out {
			if r == rule {
				return
			}
		}
		out = append(out, rule)
	}
	for _, cmd := range line.commands {
		if cmd.script {
			continue // its script's commands are proposed on their own
		}
		// What runs past clear wrappers (timeout, nice, …): the rule covers it however
		// it is wrapped.
		words := strings.Fields(cmd.allowable[len(cmd.allowable)-1])
		if len(words) == 0 {
			continue
		}
		n := 1
		for n < len(words) && n <= maxSubcommands && subcommand.MatchString(words[n]) {
			n++
		}
		add("Bash(" + strings.Join(words[:n], " ") + ":*)")
	}
	for _, path := range line.writes {
		switch {
		case discard(path):
		case strings.HasPrefix(path, "~/"):
			add("Edit(" + path + ")")
		default:
			add(fileRule("Edit", path, cwd, false))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the shell line %q runs no command a rule could name", command)
	}
	return out, nil
}

// Narrowest is the narrowest rule that covers every one of calls, for which Propose
// proposed rule (each on its own): for shell lines of one command, Bash with the
// longest run of words their commands begin with ("Bash(npm test -- --watch:*)" when
// every one ran that); for any other rule, rule itself, which names no more than a
// folder, a domain or a tool. ok is false when a call is not one rule could cover.
func Narrowest(rule string, calls []Call) (string, bool) {
	if !strings.HasPrefix(rule, "Bash(") {
		return rule, true
	}
	var common []string
	for i, c := range calls {
		line, err := parseShell(c.Command)
		if err != nil || len(line.unknown) > 0 || len(line.commands) != 1 || line.commands[0].script {
			return "", false
		}
		words := strings.Fields(line.commands[0].allowable[len(line.commands[0].allowable)-1])
		if i == 0 {
			common = words
			continue
		}
		n := 0
		for n < len(common) && n < len(words) && common[n] == words[n] {
			n++
		}
		common = common[:n]
	}
	if len(common) == 0 {
		return "", false
	}
	return "Bash(" + strings.Join(common, " ") + ":*)", true
}
