package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// geminiHost runs the real Gemini CLI in ACP mode against the scripted Gemini API
// (its "gateway" auth: GOOGLE_GEMINI_BASE_URL), with agentSupervisors.
func geminiHost(t *testing.T, f *agenttest.GeminiAPI, dir, extra string) string {
	return fmt.Sprintf(`[hosts.gemini]
command = %q
args = ["--acp"]
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, GOOGLE_GEMINI_BASE_URL = %q, GEMINI_API_KEY = "test-key", GEMINI_CLI_NO_RELAUNCH = "true", AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, agenttest.Gemini(t), dir, t.TempDir(), f.URL(), extra) + agentSupervisors
}

func TestGeminiApprovedDeniedAndTwoSessionsOnOneProcess(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewGeminiAPI(t)
	n := start(t, geminiHost(t, f, dir, ""))
	approvedThenDenied(t, n, "gemini", f, "run_shell_command", dir)
	if told := strings.ToLower(f.Output(0)); !strings.Contains(told, "cancel") && !strings.Contains(told, "denied") && !strings.Contains(told, "reject") {
		t.Fatalf("the model was not told the command was refused: %s", told)
	}
	if v := testutil.ToFloat64(n.n.Metrics.AgentStarts.WithLabelValues("gemini")); v != 1 {
		t.Fatalf("processes started = %v; one ACP process carries both sessions", v)
	}
}

func TestGeminiCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewGeminiAPI(t)
	interruptedByItself(t, start(t, geminiHost(t, f, dir, `question_timeout = "1m"`)), "gemini", f, "run_shell_command", dir)
}

func TestGemini10ConcurrentSessions(t *testing.T) {
	f := agenttest.NewGeminiAPI(t)
	tenAtOnce(t, start(t, geminiHost(t, f, t.TempDir(), "pool = 10")), "gemini", f, "run_shell_command")
}
