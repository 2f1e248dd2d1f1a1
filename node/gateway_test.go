package node

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/protocol"
)

// TestClaudeCodeThroughTheGateway: the real Claude Code, on a host whose model is
// reached through the node's gateway, is given no key: its environment names none,
// and the scripted API sees the node's key on every call. The session spent what the
// API counted (100 tokens in and 20 out a call), which is what Claude Code claims too.
func TestClaudeCodeThroughTheGateway(t *testing.T) {
	dir := t.TempDir()
	f := newFakeAnthropic(t,
		[]block{{Text: "I will look."}, {Tool: "Bash", Input: map[string]any{"command": "echo looked", "description": "look"}}},
		[]block{{Text: "Done."}},
	)
	const key = "sk-ant-node-secret"
	home := t.TempDir()
	n := start(t, fmt.Sprintf(`[connections.claude]
provider = "anthropic"
api_key_env = "NODE_ANTHROPIC_KEY"
base_url = %q
[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
stop_grace = "2s"
model = { connection = "claude" }
env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1", AGENTMUX_TEST_MARK = "@MARK@" }
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "^Bash: echo ", answer = "yes" }]
[[routes]]
supervisor = "ops"
`, f.URL(), claudeBinary(t), dir, home, filepath.Join(home, ".claude")), func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "NODE_ANTHROPIC_KEY" {
				return key
			}
			return ""
		}
	})
	res := n.run("claude", "look around")
	if !res.OK || !strings.Contains(string(res.Payload), "Done.") {
		t.Fatalf("result %+v %s", res, res.Payload)
	}
	keys := f.Keys()
	if len(keys) == 0 {
		t.Fatal("no call reached the scripted API")
	}
	for i, k := range keys {
		if k != key {
			t.Errorf("call %d reached the API with %q; want the node's key", i, k)
		}
	}
	spend := res.Usage.Spend(func(string, *protocol.Usage) (float64, bool) { return 0, false })
	if want := int64(len(keys)); spend == nil || spend.InputTokens != 100*want || spend.OutputTokens != 20*want {
		t.Errorf("the session's spend: %+v; want what the API counted for its %d calls: %d in, %d out", spend, want, 100*want, 20*want)
	}
	if agreed := testutil.ToFloat64(n.n.Metrics.UsageClaims.WithLabelValues("claude", "true")); agreed != 1 {
		t.Errorf("usage_claims_total{agreed=true} = %v; want Claude Code's claim to agree with the measure", agreed)
	}
}
