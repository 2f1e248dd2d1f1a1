package agent

import (
	"os"
	"testing"

	"github.com/agentmux/agentmux/config"
)

// An agent starts in its host's working_dir, else in the directory the router read once
// for the node, else in the process's own.
func TestAgentWorkDir(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hostDir, nodeDir, want string
	}{
		{"/srv/repo", "/var/node", "/srv/repo"},
		{"", "/var/node", "/var/node"},
		{"", "", cwd},
	} {
		a := &Agent{cfg: Config{Dir: c.nodeDir}, host: &config.Host{Process: config.Process{WorkingDir: c.hostDir}}}
		if got := a.workDir(); got != c.want {
			t.Errorf("working_dir %q, node directory %q: starts in %q, want %q", c.hostDir, c.nodeDir, got, c.want)
		}
	}
}
