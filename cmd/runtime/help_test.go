package main

import (
	"strings"
	"testing"
)

// TestEveryCommandHelps: `<command> --help` and `help <command>` print the command's
// synopsis, with its positional arguments, and its flags on stdout and exit 0; an
// unknown flag is a usage error on stderr, exit 2. The command list itself is help too.
func TestEveryCommandHelps(t *testing.T) {
	for _, c := range commands() {
		var help strings.Builder
		for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}, {c.name, "-h"}} {
			var stdout, stderr strings.Builder
			code := dispatch(args, &stdout, &stderr)
			want := strings.TrimSpace("usage: runtime " + c.name + " " + c.synopsis)
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
		var stdout, stderr strings.Builder
		if code := dispatch([]string{c.name, "--no-such-flag"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "no-such-flag") || stdout.Len() != 0 {
			t.Errorf("agentmux %s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 saying so on stderr", c.name, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr strings.Builder
	if code := dispatch([]string{"--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "respond ") || stderr.Len() != 0 {
		t.Errorf("runtime --help: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := dispatch(nil, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), "commands:") {
		t.Errorf("runtime with no command: exit %d; want 2 with the commands on stderr", code)
	}
}
