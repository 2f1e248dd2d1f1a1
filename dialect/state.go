package dialect

import (
	"path/filepath"
	"strings"
)

// State is where the agent CLI of a dialect keeps its own state, which it must be able
// to write to run at all (Claude Code's Bash tool and its resumable sessions live
// there): a sandbox grants it. Dirs are directories, Files single files. getenv reads
// the agent's environment; home is its home directory.
type State struct {
	Dirs, Files []string
	// Guessed is true when the ACP agent is none this package knows by its command:
	// Dirs are where such an agent may keep its state, and none should be made for it.
	Guessed bool
}

// StateOf is the state of the CLI of dialect name, run as command: Claude Code's
// CLAUDE_CONFIG_DIR, else ~/.claude and ~/.claude.json; Codex's CODEX_HOME, else
// ~/.codex. An ACP agent's is its CLI's, known by the command's name (claude-agent-acp:
// Claude Code's; gemini: ~/.gemini, ~ being GEMINI_CLI_HOME if set; qwen: ~/.qwen; opencode: its XDG directories;
// copilot: COPILOT_HOME, else ~/.copilot, and its cache), or, for another, Claude Code's or Gemini
// CLI's, guessed. The native protocol's agent keeps none known here.
func StateOf(name, command string, getenv func(string) string, home string) State {
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
	// xdg is the directory of kind under variable, else under home's default.
	xdg := func(variable, fallback, app string) string {
		if d := getenv(variable); d != "" {
			return filepath.Join(d, app)
		}
		return filepath.Join(home, fallback, app)
	}
	switch name {
	case ClaudeCode:
		return claude()
	case Codex:
		return codex()
	case ACP:
		switch acpAgent(command) {
		case claudeAgentACP:
			return claude()
		case "gemini":
			if d := getenv("GEMINI_CLI_HOME"); d != "" {
				return State{Dirs: []string{filepath.Join(d, ".gemini")}}
			}
			return State{Dirs: []string{filepath.Join(home, ".gemini")}}
		case "qwen":
			return State{Dirs: []string{filepath.Join(home, ".qwen")}}
		case "opencode":
			return State{Dirs: []string{xdg("XDG_DATA_HOME", ".local/share", "opencode"), xdg("XDG_CONFIG_HOME", ".config", "opencode"),
				xdg("XDG_STATE_HOME", ".local/state", "opencode"), xdg("XDG_CACHE_HOME", ".cache", "opencode")}}
		case "copilot":
			dirs := []string{filepath.Join(home, ".copilot"), xdg("XDG_CACHE_HOME", ".cache", "copilot")}
			if d := getenv("COPILOT_HOME"); d != "" {
				dirs[0] = d
			}
			return State{Dirs: dirs}
		}
		s := claude()
		s.Dirs = append(s.Dirs, filepath.Join(home, ".gemini"))
		s.Guessed = true
		return s
	}
	return State{}
}

// claudeAgentACP is the command of the ACP agent that wraps Claude Code.
const claudeAgentACP = "claude-agent-acp"

// acpAgent is the name an ACP agent is known by: its command's, without a .js.
func acpAgent(command string) string {
	return strings.TrimSuffix(filepath.Base(command), ".js")
}
