package node

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
)

// The scripted Responses API and Codex are internal/agenttest's, shared with the
// commands' tests.
type (
	call          = agenttest.Call
	fakeResponses = agenttest.Responses
)

func newFakeResponses(t *testing.T, script ...call) *fakeResponses {
	return agenttest.NewResponses(t, script...)
}

// codexHost runs the real `codex app-server` against the fake, in dir, with
// agentSupervisors; codexArgs go after the fake's provider.
func codexHost(t *testing.T, f *fakeResponses, dir, extra string, codexArgs ...string) string {
	bin := agenttest.Codex(t)
	args, _ := json.Marshal(append(agenttest.CodexProvider(f), codexArgs...))
	return fmt.Sprintf(`[hosts.codex]
command = %q
args = %s
dialect = "codex"
working_dir = %q
stop_grace = "2s"
env = { HOME = %[4]q, CODEX_HOME = %[5]q, FAKE_MODEL_KEY = "sk-test", AGENTMUX_TEST_MARK = "@MARK@" }
%[6]s
`, bin, args, dir, t.TempDir(), t.TempDir(), extra) + agentSupervisors
}
