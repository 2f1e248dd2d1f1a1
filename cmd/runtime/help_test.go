package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandHelps: `<command> --help` and `help <command>` print the command's
// synopsis, with its positional arguments, and its flags on stdout and exit 0; an
// unknown flag is a usage error on stderr, exit 2. The command list itself is help too.
func TestEveryCommandHelps(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		var help strings.Builder
		for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}, {c.name, "-h"}} {
			var stdout, stderr strings.Builder
			code := dispatch(args, &stdout, &stderr)
			want := strings.TrimSpace("usage: agentmux " + c.name + " " + c.synopsis)
			if code != exitOK || !strings.HasPrefix(stdout.String(), want+"\n") || stderr.Len() != 0 {
				t.Errorf("agentmux %s: exit %d, stdout %q, stderr %q; want exit 0 and %q first on stdout", strings.Join(args, " "), code, stdout.String(), stderr.String(), want)
			}
			if help.Len() == 0 {
				help.WriteString(stdout.String())
			} else if stdout.String() != help.String() {
				t.Errorf("agentmux %s printed another help than `%s --help`", strings.Join(args, " "), c.name)
			}
		}
		if strings.Contains(c.synopsis, "-c <manifest>") && !strings.Contains(help.String(), "manifest file") {
			t.Errorf("agentmux %s --help does not list its flags:\n%s", c.name, help.String())
		}
		// Every client command reaches a fleet by the same flags.
		if strings.Contains(c.synopsis, "[fleet]") {
			for _, want := range []string{"-c file", "-context context", "-server url", "-creds file", "-nkey file", "-user user", "-password-env variable", "-tls-ca file", "[fleet]: -c FILE"} {
				if !strings.Contains(help.String(), want) {
					t.Errorf("agentmux %s reaches a fleet, and its help has no %s:\n%s", c.name, want, help.String())
				}
			}
		}
		if c.name != "sim" && !strings.Contains(help.String(), "\nexamples:\n  ") {
			t.Errorf("agentmux %s --help shows no examples:\n%s", c.name, help.String())
		}
		for _, e := range c.examples {
			if !strings.Contains(e, "agentmux "+c.name+" ") && !strings.HasSuffix(e, "agentmux "+c.name) && !strings.Contains(e, "agentmux "+c.name+")") {
				t.Errorf("agentmux %s: the example %q is not of this command", c.name, e)
			}
		}
		var stdout, stderr strings.Builder
		if code := dispatch([]string{c.name, "--no-such-flag"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "no-such-flag") || stdout.Len() != 0 {
			t.Errorf("agentmux %s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 saying so on stderr", c.name, code, stdout.String(), stderr.String())
		}
		// Every listing takes -o text|wide|json (and --json), and says what a bad one is.
		if strings.Contains(c.synopsis, "-o text|wide|json") {
			for _, want := range []string{"-o form", "-json"} {
				if !strings.Contains(help.String(), want) {
					t.Errorf("agentmux %s lists but has no %s:\n%s", c.name, want, help.String())
				}
			}
			stdout.Reset()
			stderr.Reset()
			if code := dispatch([]string{c.name, "-o", "yaml"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), `-o "yaml": want text, wide`) {
				t.Errorf("agentmux %s -o yaml: exit %d, stderr %q; want exit 2 saying which forms there are", c.name, code, stderr.String())
			}
		}
	}
	listings := 0
	for _, c := range commands() {
		if strings.Contains(c.synopsis, "-o text|wide|json") {
			listings++
		}
	}
	if listings != 14 { // nodes, sessions, tasks, pending, grants, rules, spend, budget, policy, audit, calls, checkpoints, logs, workspace
		t.Errorf("%d commands take -o; want every listing: nodes, sessions, tasks, pending, grants, rules, spend, budget, policy, audit, calls, checkpoints, logs and workspace", listings)
	}
	var stdout, stderr strings.Builder
	if code := dispatch([]string{"--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "respond ") || stderr.Len() != 0 {
		t.Errorf("agentmux --help: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := dispatch(nil, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), "commands:") {
		t.Errorf("agentmux with no command: exit %d; want 2 with the commands on stderr", code)
	}
}

// TestCompletion: bash, run for real, completes a command from its start and a
// command's flags from theirs; zsh and fish get scripts naming the same.
func TestCompletion(t *testing.T) {
	t.Parallel()
	var script, stderr strings.Builder
	if code := dispatch([]string{"completion", "bash"}, &script, &stderr); code != exitOK {
		t.Fatalf("completion bash: exit %d %s", code, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "agentmux.bash")
	if err := os.WriteFile(path, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		line := fmt.Sprintf(`source %q; COMP_WORDS=(%s); COMP_CWORD=%d; _agentmux; echo "${COMPREPLY[*]}"`, path, strings.Join(words, " "), len(words)-1)
		out, err := exec.Command("bash", "-c", line).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct{ words, want string }{
		{"agentmux ses", "sessions"},
		{"agentmux un", "undrain"},
		{"agentmux sessions --st", "--state"},
		{"agentmux respond --rea", "--reason"},
		{"agentmux help inter", "interrupt"},
	} {
		if got := complete(strings.Fields(tc.words)...); got != tc.want {
			t.Errorf("bash completes %q to %q; want %q", tc.words, got, tc.want)
		}
	}
	for shell, want := range map[string][]string{
		"zsh":  {"#compdef agentmux", "bashcompinit", "_agentmux"},
		"fish": {"-a sessions -d 'list the sessions", "'__fish_seen_subcommand_from sessions' -l state", "'__fish_seen_subcommand_from up' -o c -r -F"},
	} {
		var out strings.Builder
		if code := dispatch([]string{"completion", shell}, &out, &stderr); code != exitOK {
			t.Fatalf("completion %s: exit %d", shell, code)
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("completion %s lacks %q", shell, w)
			}
		}
	}
	if code := dispatch([]string{"completion", "powershell"}, &script, &stderr); code != exitUsage {
		t.Errorf("completion powershell: exit %d; want 2", code)
	}
}
