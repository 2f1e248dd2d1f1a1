package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/metrics"
)

// TestVersion: `version` and `--version` print the build on stdout and exit 0, as a
// user checking which binary runs expects (a test binary has no revision to show).
func TestVersion(t *testing.T) {
	t.Parallel()
	want := "agentmux " + metrics.ReadBuild().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		p := runtimeProc(t, args...)
		if code := p.wait(t, 20*time.Second); code != exitOK || p.stdout.String() != want || p.stderr.String() != "" {
			t.Errorf("agentmux %s: exit %d, stdout %q, stderr %q; want %q on stdout", strings.Join(args, " "), code, p.stdout, p.stderr, want)
		}
	}
}
