package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/hook"
)

const (
	// envAPIToken holds the API token of a hook.
	envAPIToken = "AGENTMUX_API_TOKEN"
	// envURL is the console's address, for a hook that is not given --url.
	envURL = "AGENTMUX_URL"
	// hookWait is how long a command hook waits for the console by default: as long
	// as a person may take, as the hook's own timeout in the settings file says.
	hookWait = time.Hour
	// maxHookOutput bounds what the console's answer may be.
	maxHookOutput = 1 << 20
)

func hookCommand(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && (args[0] == config.AttachedClaudeCode || args[0] == config.AttachedCodex):
		return hookAgent(args[0], args[1:], os.Stdin, stdout, stderr)
	case len(args) > 1 && args[0] == "install" && args[1] == config.AttachedClaudeCode:
		return hookInstallClaudeCode(args[2:], stdout, stderr)
	case len(args) > 1 && args[0] == "install" && args[1] == config.AttachedCodex:
		return hookInstallCodex(args[2:], stdout, stderr)
	}
	fs := newFlags("hook", stdout, stderr) // --help, and a flag before the subcommand
	if _, err := parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "\nflags: each has its own; `agentmux hook claude-code --help`, `agentmux hook install claude-code --help`, `agentmux hook install codex --help` list them.")
		}
		return usageError(stderr, err)
	}
	return usageError(stderr, errors.New("want `agentmux hook claude-code|codex` (the hook itself) or `agentmux hook install claude-code|codex`"))
}

// hookAgent is the command hook of an agent of dialect (Claude Code's or Codex's): its
// input on stdin goes to the console's /v1/hooks/<dialect>, and the console's answer to
// stdout. When the console cannot be reached, --unreachable says what the agent is
// told: deny (the default) or ask, its own prompt.
func hookAgent(dialect string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("hook", stdout, stderr)
	base := fs.String("url", os.Getenv(envURL), "the console's `URL` (default $"+envURL+", else http://"+config.DefaultConsoleAddr+")")
	source := fs.String("source", "", "the [attached.X] `source` (may be left out when the manifest has one of dialect "+dialect+")")
	unreachable := fs.String("unreachable", config.UnreachableDeny, "what the agent is told when the console cannot be reached: `deny` or ask")
	wait := fs.Duration("timeout", hookWait, "give up on the console after this `duration`")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	if *unreachable != config.UnreachableDeny && *unreachable != config.UnreachableAsk {
		return usageError(stderr, fmt.Errorf("--unreachable %q: use deny or ask", *unreachable))
	}
	input, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
	if err != nil {
		fmt.Fprintln(stderr, "agentmux hook: read the hook's input:", err)
		return exitError
	}
	var in hook.Input
	_ = json.Unmarshal(input, &in)
	target, err := endpointURL(*base, "/v1/hooks/"+dialect, *source)
	if err != nil {
		return usageError(stderr, err)
	}
	out, err := postHook(target, input, os.Getenv(envAPIToken), *wait)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux hook:", err)
		out = hook.Output(dialect, in.HookEventName, hook.Unreachable(*unreachable, err.Error()))
	}
	_, _ = stdout.Write(append(out, '\n'))
	return exitOK
}

// endpointURL is the console's endpoint at path under base, with the source.
func endpointURL(base, path, source string) (string, error) {
	if base == "" {
		base = "http://" + config.DefaultConsoleAddr
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--url %q: give the console's address, e.g. http://%s", base, config.DefaultConsoleAddr)
	}
	if !strings.HasSuffix(u.Path, path) {
		u.Path = strings.TrimSuffix(u.Path, "/") + path
	}
	if source != "" {
		q := u.Query()
		q.Set("source", source)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// postHook posts a hook's input to the console and returns its answer, or why there is
// none to give.
func postHook(target string, input []byte, token string, wait time.Duration) ([]byte, error) {
	if token == "" {
		return nil, fmt.Errorf("%s is not set: the console takes a hook's requests only with a token of its [[api.tokens]]", envAPIToken)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the console at %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHookOutput))
	if err != nil {
		return nil, fmt.Errorf("the console's answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return nil, fmt.Errorf("the console refused the hook (%s): %s", resp.Status, e.Error)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("the console's answer is not JSON")
	}
	return bytes.TrimSpace(body), nil
}

// hookInstallClaudeCode writes agentmux's hooks into a Claude Code settings file.
func hookInstallClaudeCode(args []string, stdout, stderr io.Writer) int {
	home, _ := os.UserHomeDir()
	fs := newFlags("hook", stdout, stderr)
	settings := fs.String("settings", filepath.Join(home, ".claude", "settings.json"), "the settings `file` to write the hooks into (the project's: .claude/settings.json)")
	base := fs.String("url", os.Getenv(envURL), "the console's `URL` (default $"+envURL+", else http://"+config.DefaultConsoleAddr+")")
	source := fs.String("source", "", "the [attached.X] `source`")
	events := fs.String("events", "permission-request,session-end", "the hook `events`: pre-tool-use (every tool call), permission-request (those Claude Code would ask about), session-end")
	command := fs.Bool("command", false, "install 'agentmux hook claude-code' as a command hook, for where an http hook cannot reach the console")
	unreachable := fs.String("unreachable", config.UnreachableDeny, "with --command, what Claude Code is told when the console cannot be reached: `deny` or ask")
	tokenEnv := fs.String("token-env", envAPIToken, "the `variable` Claude Code reads the API token from")
	timeout := fs.Int("timeout", int(hookWait/time.Second), "the hook's timeout in `seconds`: longer than the source's question_timeout, so a person can answer")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	names, err := hookEvents(*events)
	if err != nil {
		return usageError(stderr, err)
	}
	target, err := endpointURL(*base, "/v1/hooks/claude-code", *source)
	if err != nil {
		return usageError(stderr, err)
	}
	h := hook.ClaudeHook{URL: target, TokenEnv: *tokenEnv, Timeout: *timeout}
	if *command {
		if h.Command, err = hookCommandLine(config.AttachedClaudeCode, *base, *source, *unreachable); err != nil {
			fmt.Fprintln(stderr, "agentmux hook install:", err)
			return exitError
		}
	}
	old, err := os.ReadFile(*settings)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stderr, "agentmux hook install:", err)
		return exitError
	}
	out, err := hook.InstallClaude(old, names, h)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook install: %s: %v\n", *settings, err)
		return exitError
	}
	if err := writeFileAtomic(*settings, out); err != nil {
		fmt.Fprintln(stderr, "agentmux hook install:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote agentmux's Claude Code hooks (%s) into %s; Claude Code sends them with the token in $%s\n", strings.Join(names, ", "), *settings, *tokenEnv)
	return exitOK
}

// writeFileAtomic replaces path with data, keeping its mode (0600 for a new file); a
// symbolic link (a dotfiles manager's) keeps pointing at the file it names.
func writeFileAtomic(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".agentmux-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// hookEvents is the hook events --events names.
func hookEvents(flag string) ([]string, error) {
	var names []string
	for _, e := range strings.Split(flag, ",") {
		name, ok := hook.Event(strings.TrimSpace(e))
		if !ok {
			return nil, fmt.Errorf("--events: %q is not pre-tool-use, permission-request or session-end", e)
		}
		names = append(names, name)
	}
	return names, nil
}

// hookCommandLine is the command hook's line for an agent of dialect: this binary, as a
// POSIX shell (which Claude Code and Codex run it with) reads it.
func hookCommandLine(dialect, base, source, unreachable string) (string, error) {
	if unreachable != config.UnreachableDeny && unreachable != config.UnreachableAsk {
		return "", fmt.Errorf("--unreachable %q: use deny or ask", unreachable)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("where this binary is, for the command hook: %w", err)
	}
	if base == "" {
		base = "http://" + config.DefaultConsoleAddr
	}
	words := []string{self, "hook", dialect, "--url", base}
	if source != "" {
		words = append(words, "--source", source)
	}
	if unreachable == config.UnreachableAsk {
		words = append(words, "--unreachable", unreachable)
	}
	for i, w := range words {
		if words[i], err = syntax.Quote(w, syntax.LangPOSIX); err != nil {
			return "", fmt.Errorf("%q cannot be written in a command line: %w", w, err)
		}
	}
	return strings.Join(words, " "), nil
}
