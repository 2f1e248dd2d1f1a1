package node

import (
	"fmt"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// copilotHost runs the real GitHub Copilot CLI as an ACP agent (`copilot --acp`) with a
// custom model provider (BYOK, which needs no GitHub sign-in): the scripted Chat
// Completions API; with agentSupervisors.
func copilotHost(t *testing.T, f *agenttest.ChatCompletions, dir, extra string) string {
	return fmt.Sprintf(`[hosts.copilot]
command = %q
args = ["--acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, COPILOT_PROVIDER_BASE_URL = %q, COPILOT_PROVIDER_API_KEY = "sk-test", COPILOT_MODEL = "gpt-5.4", COPILOT_PROVIDER_WIRE_MODEL = "fake-model", AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, agenttest.NPMAgent(t, "@github/copilot", agenttest.CopilotVersion, "copilot"), dir, t.TempDir(), f.URL(), extra) + agentSupervisors
}

func TestCopilotApprovedAndDenied(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t)
	approvedThenDenied(t, start(t, copilotHost(t, f, dir, "")), "copilot", f, "bash", dir)
	endsTurnAtRefusal(t, f, "Copilot CLI 1.0.102") // "Operation cancelled by user"
}

func TestCopilotCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t)
	interruptedByItself(t, start(t, copilotHost(t, f, dir, `question_timeout = "1m"`)), "copilot", f, "bash", dir)
}

func TestCopilot10ConcurrentSessions(t *testing.T) {
	f := agenttest.NewChatCompletions(t)
	tenAtOnce(t, start(t, copilotHost(t, f, t.TempDir(), "pool = 10")), "copilot", f, "bash")
}
