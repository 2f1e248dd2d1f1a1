package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
)

// trustWait bounds the whole exchange with `codex app-server` that trusts the hooks.
const trustWait = time.Minute

// hookInstallCodex writes agentmux's command hooks into a Codex hooks.json and, with
// --trust, trusts them in Codex, as a person does in Codex's /hooks: Codex runs a new
// or changed hook only once it is trusted, and says nothing of one it skips.
func hookInstallCodex(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("hook", stdout, stderr)
	file := fs.String("hooks", filepath.Join(codexHome(), "hooks.json"), "the Codex hooks `file` to write (a project's: .codex/hooks.json, which Codex reads only in a trusted project)")
	base := fs.String("url", os.Getenv(envURL), "the console's `URL` (default $"+envURL+", else http://"+config.DefaultConsoleAddr+")")
	source := fs.String("source", "", "the [attached.X] `source`")
	events := fs.String("events", "permission-request,session-end", "the hook `events`: permission-request (what Codex would ask about), pre-tool-use (every tool call, deny only; for codex exec, which asks nothing), session-end")
	unreachable := fs.String("unreachable", config.UnreachableDeny, "what Codex is told when the console cannot be reached: `deny` or ask")
	timeout := fs.Int("timeout", int(hookWait/time.Second), "the hook's timeout in `seconds`: longer than the source's question_timeout, so a person can answer")
	trust := fs.Bool("trust", false, "trust the hooks written in Codex (runs 'codex app-server' to read each hook's hash and record it, as /hooks does)")
	codexBin := fs.String("codex", "codex", "the Codex `binary` --trust runs")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	names, err := hookEvents(*events)
	if err != nil {
		return usageError(stderr, err)
	}
	command, err := hookCommandLine(config.AttachedCodex, *base, *source, *unreachable)
	if err != nil {
		return usageError(stderr, err)
	}
	old, err := os.ReadFile(*file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, "agentmux hook install:", err)
		return exitError
	}
	out, err := hook.InstallCodex(old, names, hook.CodexHook{Command: command, Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook install: %s: %v\n", *file, err)
		return exitError
	}
	if err := writeFileAtomic(*file, out); err != nil {
		fmt.Fprintln(stderr, "agentmux hook install:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote agentmux's Codex hooks (%s) into %s; they send Codex's requests with the token in $%s\n", strings.Join(names, ", "), *file, envAPIToken)
	if !*trust {
		fmt.Fprintln(stdout, "Codex runs them only once they are trusted: open /hooks in Codex and trust agentmux's, or run this again with --trust")
		return exitOK
	}
	n, err := trustCodexHooks(*codexBin, *file, trustWait)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook install: the hooks are written but not trusted: %v; open /hooks in Codex and trust agentmux's\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "trusted %d agentmux hooks in Codex\n", n)
	return exitOK
}

// codexHome is where Codex keeps its configuration: $CODEX_HOME, else ~/.codex.
func codexHome() string {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}
