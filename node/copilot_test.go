package node

import (
	"fmt"
	"os"
	"path/filepath"
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
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo hi > " + target, "description": "write a greeting"}},
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo again >> " + target, "description": "write more"}},
		agenttest.Call{Text: "Written."},
	)
	n := start(t, copilotHost(t, f, dir, ""))
	res := n.run("copilot", "write hi")
	if !res.OK {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\nagain\n" {
		t.Fatalf("the approved commands did not run: %q %v", b, err)
	}
	if len(res.Requests) != 2 || res.Requests[0].Decider != "rule:ops" || res.Requests[1].Decider != "rule:ops" {
		t.Fatalf("requests %+v; want each command asked", res.Requests)
	}
	f.Replay(
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "rm " + victim, "description": "clean up"}},
		agenttest.Call{Text: "Left it alone."},
	)
	res = n.run("copilot", "clean up")
	if !res.OK || len(res.Requests) != 1 || string(res.Requests[0].Value) != `"no"` {
		t.Fatalf("second session %+v", res)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the denied command ran: %v", err)
	}
	// Copilot CLI ends its turn at a refused call ("Operation cancelled by user").
	if told := f.Output(0); told != "" {
		t.Fatalf("the model was told %s; Copilot CLI 1.0.102 ends the turn at a refusal", told)
	}
}

func TestCopilotCancelledByInterrupt(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo x > prod.txt", "description": "touch prod"}},
		agenttest.Call{Text: "never reached"},
	)
	n := start(t, copilotHost(t, f, dir, `question_timeout = "1m"`))
	if why := interruptAtApproval(t, n, "copilot"); why != "acp turn ended: cancelled" {
		t.Errorf("the session ended with %q; want Copilot CLI's own end of the turn", why)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

func TestCopilot10ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := agenttest.NewChatCompletions(t,
		agenttest.Call{Name: "bash", Args: map[string]any{"command": "echo hi > concurrent.txt", "description": "write"}},
		agenttest.Call{Text: "Done."},
	)
	n := start(t, copilotHost(t, f, dir, "pool = 10"))
	concurrently(t, n, "copilot", 10)
}
