package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/protocol"
)

// Codex runs its commands outside its own sandbox here, as in
// TestCodexBudgetRaisedThenRefused: under load its bubblewrap now and then fails the
// first command ("bwrap: setting up uid map: Permission denied"). What is tested is the
// approvals, not Codex's sandbox.
func TestCodexApprovedAndDeclinedCommands(t *testing.T) {
	dir := t.TempDir()
	target, victim := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFakeResponses(t,
		agenttest.Exec("echo hi > "+target),
		agenttest.Exec("rm "+victim),
		call{Text: "One written, one refused."},
	)
	n := start(t, codexHost(t, f, dir, "", "-c", `sandbox_mode="danger-full-access"`))
	res := n.run("codex", "write hi, then clean up")
	if !res.OK || !strings.Contains(string(res.Payload), `"text":"One written, one refused."`) {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi\n" {
		t.Fatalf("the approved command did not run: %q %v; requests %+v; the model was told %s", b, err, res.Requests, f.Output(0))
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("the declined command ran: %v", err)
	}
	if len(res.Requests) != 2 || res.Requests[0].Decider != "rule:ops" || res.Requests[1].Decider != "rule:ops" {
		t.Fatalf("requests %+v", res.Requests)
	}
	if told := f.Output(1); !strings.Contains(told, "rejected") {
		t.Fatalf("the model was told %s; want the refusal", told)
	}
	// What its three model calls used, as Codex totals them for the thread: the scripted
	// API says 100 tokens in and 20 out each. Codex gives no cost, and [pricing] does
	// not name the model: unpriced.
	spend := res.Usage.Spend(func(string, *protocol.Usage) (float64, bool) { return 0, false })
	if spend == nil || len(spend.Models) != 1 || spend.Models[0].Model != "gpt-fake" || spend.InputTokens != 300 || spend.OutputTokens != 60 ||
		len(spend.Unpriced) != 1 || spend.CostUSD != 0 {
		t.Errorf("the session's spend: %+v; want gpt-fake's 300 tokens in and 60 out, unpriced", spend)
	}
}

func TestCodexInterruptMidTurn(t *testing.T) {
	dir := t.TempDir()
	f := newFakeResponses(t, agenttest.Exec("echo x > prod.txt"), call{Text: "never"})
	n := start(t, codexHost(t, f, dir, `question_timeout = "1m"`))
	interruptAtApproval(t, n, "codex")
	if _, err := os.Stat(filepath.Join(dir, "prod.txt")); err == nil {
		t.Fatal("the interrupted command ran")
	}
}

func TestCodex20ConcurrentSessions(t *testing.T) {
	dir := t.TempDir()
	f := newFakeResponses(t, agenttest.Exec("echo hi > concurrent.txt"), call{Text: "Done."})
	n := start(t, codexHost(t, f, dir, "pool = 20"))
	concurrently(t, n, "codex", 20)
}
