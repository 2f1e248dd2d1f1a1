package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// acpManifest runs the real claude-agent-acp (an ACP agent wrapping Claude Code) against
// the fake Anthropic API, with agentSupervisors.
func acpManifest(t *testing.T, f *fakeAnthropic, dir, extra string) string {
	bin := npmAgent(t, "@agentclientprotocol/claude-agent-acp", acpVersion, "claude-agent-acp")
	return fmt.Sprintf(`[hosts.acp]
command = %q
dialect = "acp"
working_dir = %q
stop_grace = "2s"
env = { HOME = %q, ANTHROPIC_BASE_URL = %q, ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1", AGENTMUX_TEST_MARK = "@MARK@" }
%s
`, bin, dir, t.TempDir(), f.URL(), extra) + agentSupervisors
}

func TestACPAgentApprovedDeniedAndTwoSessionsOnOneProcess(t *testing.T) {
	dir := t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}}},
		[]block{{Text: "Written."}},
	)
	n := start(t, acpManifest(t, f, dir, ""))
	res := n.run("acp", "write hi")
	if !res.OK || !strings.Contains(string(res.Payload), `"stop_reason":"end_turn"`) {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Fatalf("the approved command did not run: %q %v", b, err)
	}
	if len(res.Requests) != 1 || res.Requests[0].Type != "approval" || res.Requests[0].Decider != "rule:ops" {
		t.Fatalf("requests %+v", res.Requests)
	}

	f.Replay(
		[]block{{Tool: "Bash", Input: map[string]any{"command": "rm " + victim, "description": "clean up"}}},
		[]block{{Text: "Left it alone."}},
	)
	res = n.run("acp", "clean up")
	if !res.OK {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	if got, isErr := f.ToolResult(0); !isErr {
		t.Fatalf("the model was not told the tool was refused: %s (requests %+v)", got, res.Requests)
	}
	if v := testutil.ToFloat64(n.n.Metrics.AgentStarts.WithLabelValues("acp")); v != 1 {
		t.Fatalf("processes started = %v; one ACP process carries both sessions", v)
	}
}

func TestACPAgentCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}}},
		[]block{{Text: "never reached"}},
	)
	n := start(t, acpManifest(t, f, dir, `question_timeout = "1m"`))
	interruptAtApproval(t, n, "acp")
}

func TestACP10ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Tool: "Bash", Input: map[string]any{"command": "echo hi > concurrent.txt", "description": "write"}}},
		[]block{{Text: "Done."}},
	)
	n := start(t, acpManifest(t, f, dir, "pool = 10"))
	concurrently(t, n, "acp", 10)
}
