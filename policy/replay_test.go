package policy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
)

// replayed decides every past request of h again with manifest, and counts the changes.
func replayed(t *testing.T, h *history, manifest string, deps decide.Deps) (map[string]int, []Replayed) {
	t.Helper()
	m, err := config.Parse(filepath.Join(t.TempDir(), "new.toml"), []byte(manifest))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	r, err := NewReplayer(m, deps)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var out []Replayed
	for _, p := range PastFromAudit(h.records) {
		x := r.Replay(context.Background(), p)
		if x.Error != "" {
			t.Fatalf("%s: %s", p.Text, x.Error)
		}
		counts[x.Change]++
		out = append(out, x)
	}
	return counts, out
}

// The fleet's policy when the history was made: ops allows npm test, and asks the
// person on call about anything else.
const current = `
[hosts.coder]
command = "true"
[supervisors.ops]
strategy = "rule"
rules = [{ type = "approval", match = "npm test", answer = "yes" }]
[supervisors.oncall]
strategy = "human"
[[routes]]
type = "approval"
match = "npm test"
supervisor = "ops"
[[routes]]
supervisor = "oncall"
`

func replayHistory() *history {
	var h history
	h.add(20, "coder", "Bash", bash("npm test"), "yes", "rule:ops")
	h.add(3, "coder", "Bash", bash("rm -rf build"), "no", "human:carol")
	h.add(5, "coder", "Bash", bash("git push origin main"), "yes", "human:ana")
	return &h
}

// TestReplayUnchangedIsIdentical: the manifest that made the history decides it the
// same way: rules as they did, a person's requests asked of a person again.
func TestReplayUnchangedIsIdentical(t *testing.T) {
	counts, _ := replayed(t, replayHistory(), current, decide.Deps{})
	if counts[Same] != 28 || len(counts) != 1 {
		t.Errorf("replayed with the same manifest: %v; want all 28 the same", counts)
	}
}

// TestReplayFlagsADangerousChange: a rule that allows rm would allow what a person
// denied, three times over; flagged dangerous.
func TestReplayFlagsADangerousChange(t *testing.T) {
	loose := strings.Replace(strings.Replace(current, `match = "npm test", answer = "yes" }]`, `match = "npm test", answer = "yes" }, { type = "approval", match = "rm ", answer = "yes" }]`, 1),
		"match = \"npm test\"\nsupervisor", "match = \"npm test|rm \"\nsupervisor", 1)
	counts, out := replayed(t, replayHistory(), loose, decide.Deps{})
	if counts[AllowsDenied] != 3 || counts[Same] != 25 {
		t.Errorf("replayed with rm allowed: %v", counts)
	}
	dangerous := 0
	for _, x := range out {
		if x.Dangerous {
			dangerous++
			if x.Decider != "human:carol" || x.NewDecider != "rule:ops" || string(x.NewValue) != `"yes"` {
				t.Errorf("dangerous: %+v", x)
			}
		}
	}
	if dangerous != 3 {
		t.Errorf("%d dangerous; want the 3 rm -rf build carol denied", dangerous)
	}
}

// TestReplayAsksTheModelOnce: an llm supervisor decides the history against the model
// (a scripted Chat Completions API that approves all but rm); a second replay with the
// same cache calls the model no more.
func TestReplayAsksTheModelOnce(t *testing.T) {
	var calls atomic.Int64
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		decision := "approve"
		if strings.Contains(string(body), "rm -rf") {
			decision = "deny"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"fake-1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			fmt.Sprintf(`{"decision":%q,"reason":"replayed","risk_level":"low"}`, decision))
	}))
	t.Cleanup(model.Close)
	manifest := fmt.Sprintf(`
[hosts.coder]
command = "true"
[connections.fake]
provider = "openai"
base_url = "%s/v1"
api_key_env = "FAKE_KEY"
default_model = "fake-1"
[supervisors.reviewer]
strategy = "llm"
connection = "fake"
[[routes]]
type = "approval"
supervisor = "reviewer"
`, model.URL)
	cache := &Cache{Dir: t.TempDir()}
	deps := decide.Deps{HTTPClient: &http.Client{Transport: cache}, Getenv: func(k string) string { return map[string]string{"FAKE_KEY": "sk-test"}[k] }}
	counts, _ := replayed(t, replayHistory(), manifest, deps)
	if counts[Same] != 20 || counts[DecidesAsked] != 8 || calls.Load() != 28 {
		t.Errorf("replayed with the model: %v, %d calls; want npm test the same, the 8 people's decided by the model, 28 calls", counts, calls.Load())
	}
	again, _ := replayed(t, replayHistory(), manifest, deps)
	if calls.Load() != 28 || cache.Hits != 28 || fmt.Sprint(again) != fmt.Sprint(counts) {
		t.Errorf("the second replay: %v, %d calls in all, %d from the cache; want the same, from the cache alone", again, calls.Load(), cache.Hits)
	}
}
