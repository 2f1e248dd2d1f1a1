package permission

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
)

// Call is the tool call an approval asks for.
type Call struct {
	Tool    string // "Bash", "Edit", "mcp__github__create_issue", …
	Command string // Bash
	Path    string // a file tool's path, absolute or relative to the working folder
	URL     string // WebFetch
	Values  []string
	Cwd     string // the working folder the request names (Codex), if any
}

// FromApproval maps a canonical approval (the agent's request, its extra fields kept)
// to the call it asks for; ok is false when it names no tool.
func FromApproval(request json.RawMessage) (Call, bool) {
	var a struct {
		Tool     string          `json:"tool"`
		Input    json.RawMessage `json:"input"`
		ToolKind string          `json:"tool_kind"` // ACP
		Cwd      string          `json:"cwd"`
	}
	if json.Unmarshal(request, &a) != nil {
		return Call{}, false
	}
	var input map[string]any
	_ = json.Unmarshal(a.Input, &input)
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := input[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	c := Call{Tool: a.Tool, Cwd: a.Cwd}
	if c.Tool == "" {
		switch a.ToolKind { // ACP's kinds
		case "execute":
			c.Tool = "Bash"
		case "read", "search":
			c.Tool = "Read"
		case "edit", "delete", "move":
			c.Tool = "Edit"
		case "fetch":
			c.Tool = "WebFetch"
		default:
			return Call{}, false
		}
	}
	c.Command = str("command", "cmd")
	c.Path = str("file_path", "notebook_path", "path", "abs_path")
	c.URL = str("url")
	for _, v := range input {
		if s, ok := v.(string); ok {
			c.Values = append(c.Values, s)
		}
	}
	return c, c.Tool != ""
}

// matches reports whether rule r covers call c; for a shell line, with part as the
// command (one command of the line, see Set.Decide).
func (r *Rule) matches(c Call, part string, cwd string) bool {
	if !r.covers(c.Tool) {
		return false
	}
	switch {
	case r.Spec == "":
		return true
	case r.Tool == "Bash":
		if r.prefix != "" {
			return part == r.prefix || strings.HasPrefix(part, r.prefix+" ")
		}
		return r.glob.MatchString(part)
	case r.domain != "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return false
		}
		host := strings.ToLower(u.Hostname())
		return host == r.domain || strings.HasSuffix(host, "."+r.domain)
	case fileTools[r.Tool] != "":
		if c.Path == "" {
			return false // a change whose files are unknown (Codex): only a rule for the whole tool covers it
		}
		p := c.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if r.glob.MatchString(p) {
			return true
		}
		rel, err := filepath.Rel(cwd, p)
		return err == nil && cwd != "" && !strings.HasPrefix(rel, "..") && r.glob.MatchString("\x00cwd/"+rel)
	}
	for _, v := range c.Values {
		if r.glob.MatchString(v) {
			return true
		}
	}
	return false
}

// String is the call as a rule would name it: Bash(npm test), Read(/repo/a.go).
func (c Call) String() string {
	switch {
	case c.Command != "":
		return c.Tool + "(" + c.Command + ")"
	case c.Path != "":
		return c.Tool + "(" + c.Path + ")"
	case c.URL != "":
		return c.Tool + "(" + c.URL + ")"
	}
	return c.Tool
}
