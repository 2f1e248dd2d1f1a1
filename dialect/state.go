package dialect

import "path/filepath"

// State is where the agent CLI of a dialect keeps its own state, which it must be able
// to write to run at all (Claude Code's Bash tool and its resumable sessions live
// there): a sandbox grants it. Dirs are directories, Files single files. getenv reads
// the agent's environment; home is its home directory.
type State struct {
	Dirs, Files []string
}

// StateOf is the state of dialect name's CLI: Claude Code's CLAUDE_CONFIG_DIR, else
// ~/.claude and ~/.claude.json; Codex's CODEX_HOME, else ~/.codex; an ACP agent's
// may be either CLI's (claude-agent-acp runs Claude Code), or Gemini CLI's ~/.gemini.
// The native protocol's agent keeps none known here.
func StateOf(name string, getenv func(string) string, home string) State {
	claude := func() State {
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return State{Dirs: []string{d}}
		}
		return State{Dirs: []string{filepath.Join(home, ".claude")}, Files: []string{filepath.Join(home, ".claude.json")}}
	}
	codex := func() State {
		if d := getenv("CODEX_HOME"); d != "" {
			return State{Dirs: []string{d}}
		}
		return State{Dirs: []string{filepath.Join(home, ".codex")}}
	}
	switch name {
	case ClaudeCode:
		return claude()
	case Codex:
		return codex()
	case ACP:
		s := claude()
		s.Dirs = append(s.Dirs, filepath.Join(home, ".gemini"))
		return s
	}
	return State{}
}
