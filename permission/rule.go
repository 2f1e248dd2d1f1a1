package permission

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Rule is one permission rule: a tool, and what of its input it covers.
type Rule struct {
	Text string // as written
	Tool string // "Bash", "Read", "mcp__github", …
	// Spec is what is in the parentheses, "" for the whole tool.
	Spec string

	prefix string         // Bash "cmd:*": the command or its words after
	glob   *regexp.Regexp // Bash with *, a path pattern, or another tool's value
	domain string         // WebFetch(domain:…)
}

// Paths a relative path rule is resolved against.
type Paths struct {
	Root string // where "/x" starts: the settings file's project, or the manifest's folder
	Home string // "~/x"
}

var ruleSyntax = regexp.MustCompile(`^([A-Za-z0-9_-]+)(?:\((.*)\))?$`)

// Parse reads one rule as Claude Code writes it.
func Parse(text string, p Paths) (*Rule, error) {
	m := ruleSyntax.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return nil, fmt.Errorf("%q is not a permission rule: write Tool or Tool(specifier), e.g. \"Bash(npm run test:*)\" or \"Read(./src/**)\"", text)
	}
	r := &Rule{Text: text, Tool: m[1], Spec: m[2]}
	if strings.Contains(text, "(") && r.Spec == "" {
		return nil, fmt.Errorf("%q has an empty specifier; write %s alone for every use of the tool", text, r.Tool)
	}
	if r.Spec == "" || r.Spec == "*" {
		r.Spec = ""
		return r, nil
	}
	switch {
	case r.Tool == "Bash":
		if prefix, ok := strings.CutSuffix(r.Spec, ":*"); ok {
			r.prefix = strings.TrimSpace(prefix)
		} else {
			r.glob = wildcard(r.Spec)
		}
	case r.Tool == "WebFetch":
		d, ok := strings.CutPrefix(r.Spec, "domain:")
		if !ok || d == "" {
			return nil, fmt.Errorf("%q: WebFetch takes domain:<host>, e.g. WebFetch(domain:example.com)", text)
		}
		r.domain = strings.ToLower(d)
	case fileTools[r.Tool] != "":
		r.glob = pathGlob(r.Spec, p)
	default:
		r.glob = wildcard(r.Spec)
	}
	return r, nil
}

// fileTools are the tools whose rules are path patterns, by the kind of access.
var fileTools = map[string]string{"Read": "read", "Edit": "edit", "Write": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
	"Glob": "read", "Grep": "read", "LS": "read"}

// covers reports whether the rule's tool is the call's: Edit covers every tool that
// edits files, Read every tool that reads them, "mcp__srv" every tool of that server.
func (r *Rule) covers(tool string) bool {
	switch {
	case r.Tool == tool:
		return true
	case r.Tool == "Edit" || r.Tool == "Read":
		return fileTools[tool] == fileTools[r.Tool] && fileTools[tool] != ""
	case strings.HasPrefix(r.Tool, "mcp__") && strings.Count(r.Tool, "__") == 1:
		return strings.HasPrefix(tool, r.Tool+"__")
	}
	return false
}

// wildcard is a pattern in which * matches anything. A final " *" also matches
// nothing, at a word's end: "ls *" matches "ls" and "ls -la", not "lsof", as Claude
// Code's rules do.
func wildcard(spec string) *regexp.Regexp {
	tail := ""
	if s, ok := strings.CutSuffix(spec, " *"); ok {
		spec, tail = s, `(?: .*)?`
	}
	parts := strings.Split(spec, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + tail + `$`)
}

// pathGlob resolves a gitignore-style path pattern and compiles it: ** crosses
// folders, * and ? stay within one. "//x" is absolute, "~/x" in the home folder, "/x"
// from Paths.Root, anything else from the agent's working folder (marked "./").
func pathGlob(spec string, p Paths) *regexp.Regexp {
	var abs string
	switch {
	case strings.HasPrefix(spec, "//"):
		abs = spec[1:]
	case strings.HasPrefix(spec, "~/"):
		abs = filepath.Join(p.Home, spec[2:])
	case strings.HasPrefix(spec, "/"):
		abs = filepath.Join(p.Root, spec[1:])
	default:
		if !strings.Contains(strings.TrimPrefix(spec, "./"), "/") && !strings.HasPrefix(spec, "./") {
			spec = "**/" + spec // like .gitignore: a bare name matches at any depth
		}
		abs = "\x00cwd/" + strings.TrimPrefix(spec, "./")
	}
	if strings.HasSuffix(spec, "/") {
		abs += "**"
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(abs); i++ {
		switch c := abs[i]; {
		case strings.HasPrefix(abs[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 2
		case strings.HasPrefix(abs[i:], "**"):
			b.WriteString(`.*`)
			i++
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?':
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
