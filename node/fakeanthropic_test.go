package node

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// The agent CLIs the tests run, from npm (keep in step with .ci/run).
const (
	claudeVersion = agenttest.ClaudeVersion
	acpVersion    = agenttest.ACPVersion
)

// The scripted Anthropic API and the CLIs from npm are internal/agenttest's, shared
// with the commands' tests.
type (
	block         = agenttest.Block
	fakeAnthropic = agenttest.Anthropic
)

func newFakeAnthropic(t *testing.T, script ...[]block) *fakeAnthropic {
	return agenttest.NewAnthropic(t, script...)
}

func claudeBinary(t *testing.T) string { return agenttest.Claude(t) }

func npmAgent(t *testing.T, pkg, version, bin string) string {
	return agenttest.NPMAgent(t, pkg, version, bin)
}

// claudeHost is a host running the real CLI against the fake, in dir.
func claudeHost(t *testing.T, name string, f *fakeAnthropic, dir, extra string) string {
	home := t.TempDir()
	// Claude Code keeps all its state in CLAUDE_CONFIG_DIR, which its sandbox lets it
	// write (dialect.StateOf); without it, ~/.claude.json could tear with 20 at once.
	config := filepath.Join(home, ".claude")
	return fmt.Sprintf(`[hosts.%s]
command = %q
dialect = "claude-code"
working_dir = %q
stop_grace = "2s"
env = { HOME = %[4]q, CLAUDE_CONFIG_DIR = %[7]q, ANTHROPIC_BASE_URL = %[5]q, ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1", AGENTMUX_TEST_MARK = "@MARK@" }
%[6]s
`, name, claudeBinary(t), dir, home, f.URL(), extra, config)
}

// agentSupervisors supervise the real agents' tests alike: ops allows echo and refuses
// rm, security answers the signing-algorithm question, and nobody (never answering) is
// routed every request that mentions prod.
const agentSupervisors = `
[supervisors.ops]
strategy = "rule"
rules = [
  { type = "approval", match = "echo ", answer = "yes" },
  { type = "approval", match = "rm ", answer = "no" },
]
[supervisors.security]
strategy = "rule"
rules = [{ type = "question", match = "(?i)signing algorithm", answer = "RS256" }]
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "prod"
supervisor = "nobody"
[[routes]]
type = "question"
supervisor = "security"
[[routes]]
supervisor = "ops"
`
