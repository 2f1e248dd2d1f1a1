package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/agenttest"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// stepper is a native agent of three steps, each ended with a checkpoint of the steps
// done; in its first attempt it stops after the first, as if working, until its node is
// killed. Brought back, it goes on from its checkpoint's state and says what it was told.
const stepper = `import json, sys, time
msg = json.loads(sys.stdin.readline())
r = msg.get("resume")
state = r["state"] if r else {"done": []}
for step in range(len(state["done"]) + 1, 4):
    state["done"].append(step)
    print(json.dumps({"type": "checkpoint", "state": state}), flush=True)
    if step == 1 and not r:
        time.sleep(300)
told = r and {"checkpoint": r["checkpoint"], "node": r["node"], "note": r["note"]}
print(json.dumps({"type": "result", "text": json.dumps({"resumed": told, "done": state["done"]})}), flush=True)
`

// TestFleetSessionResumesFromItsCheckpoint: the node running a native agent's session is
// killed with SIGKILL after the agent's first checkpoint; the node that takes the task
// brings the session back from that checkpoint, on a fleet whose nodes share no
// directory: the agent goes on from its state (the first step is not done again), is
// told where it came from, and the session ends ok once, its audit saying it resumed.
func TestFleetSessionResumesFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nstop_grace = \"2s\"\n", stepper))
	nc, js := f.conn(t)
	results := events[map[string]any](t, nc, wire.EventSubject("w", "t-move", "result"))
	victim := f.node(t, "agents1")
	submitTasks(t, js, "w", "take three steps", "t-move")
	proctest.EventuallyWithin(t, time.Minute, "the first step's checkpoint", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := store.ListCheckpoints(ctx, nc, "t-move")
		return err == nil && len(list) == 1
	})
	kill(t, victim)
	agents2 := f.node(t, "agents2")
	var res map[string]any
	select {
	case res = <-results:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the session did not end on agents2:\n%s", agents2.stderr)
	}
	var told struct {
		Resumed *struct {
			Checkpoint int    `json:"checkpoint"`
			Node       string `json:"node"`
			Note       string `json:"note"`
		} `json:"resumed"`
		Done []int `json:"done"`
	}
	text, _ := res["text"].(string)
	if err := json.Unmarshal([]byte(text), &told); err != nil {
		t.Fatalf("result %v: %v", res, err)
	}
	if told.Resumed == nil || told.Resumed.Checkpoint != 1 || told.Resumed.Node != "agents1" || !strings.Contains(told.Resumed.Note, "moved to another node") ||
		fmt.Sprint(told.Done) != "[1 2 3]" {
		t.Errorf("the agent was told %+v and did %v; want checkpoint 1 of agents1, and steps 2 and 3 after it", told.Resumed, told.Done)
	}
	var resumed, ended []wire.AuditRecord
	proctest.EventuallyWithin(t, 30*time.Second, "the session's end in the audit", func() bool {
		resumed, ended = nil, nil
		for _, r := range auditRecords(t, js) {
			switch {
			case r.Session != "t-move":
			case r.Kind == wire.EventSessionResumed:
				resumed = append(resumed, r)
			case r.Kind == "session.ended":
				ended = append(ended, r)
			}
		}
		return len(ended) > 0
	})
	if len(ended) != 1 || ended[0].Outcome != "ok" || ended[0].Node != "agents2" {
		t.Errorf("ended %+v; want once, ok, on agents2", ended)
	}
	if len(resumed) != 1 || resumed[0].Node != "agents2" || !strings.Contains(resumed[0].Reason, "checkpoint 1, taken on agents1 in attempt 0") {
		t.Errorf("resumed %+v; want one record, on agents2, from checkpoint 1 of agents1", resumed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if list, err := store.ListCheckpoints(ctx, nc, "t-move"); err != nil || len(list) != 3 || list[2].Seq != 3 || list[2].Node != "agents2" {
		t.Errorf("checkpoints after: %+v %v; want seqs 1 to 3, the last two taken on agents2", list, err)
	}
}

// claudeNode is a node's manifest running the real Claude Code against api, with a
// home and a workspace dir of its own, each session in a worktree of repo; bash is the
// rule for its Bash approvals ("" asks nobody, who never answers).
func claudeNode(t *testing.T, api *agenttest.Anthropic, repo, bash string) (body, workspaces, config string) {
	home, workspaces := t.TempDir(), t.TempDir()
	config = filepath.Join(home, ".claude")
	rules := `{ type = "approval", match = "^Write: ", answer = "yes" }`
	if bash != "" {
		rules += `, { type = "approval", match = "^Bash: ", answer = "` + bash + `" }`
	}
	return fmt.Sprintf(`[hosts.claude]
command = %q
dialect = "claude-code"
working_dir = %q
workspace = "worktree"
workspace_dir = %q
stop_grace = "2s"
question_timeout = "10m"
checkpoint_interval = "1s"
env = { HOME = %q, CLAUDE_CONFIG_DIR = %q, ANTHROPIC_BASE_URL = %q, ANTHROPIC_API_KEY = "sk-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", DISABLE_TELEMETRY = "1", DISABLE_AUTOUPDATER = "1" }
[supervisors.ops]
strategy = "rule"
rules = [%s]
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "^Bash: "
supervisor = %q
[[routes]]
supervisor = "ops"
`, agenttest.Claude(t), repo, workspaces, home, config, api.URL(), rules, map[bool]string{true: "ops", false: "nobody"}[bash != ""]), workspaces, config
}

// gitRepo is a repository of one commit, the origin a fleet's workspaces check out.
func gitRepo(t *testing.T) string {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"commit", "--quiet", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestFleetClaudeCodeResumesItsConversation: the real Claude Code writes a file in its
// first turn, then waits on an approval nobody gives; its node is killed with SIGKILL.
// The node that takes the task, sharing no directory with the first, puts the
// checkpointed transcript where its Claude Code looks and starts it resumed: the model's
// next request carries the first turn's messages and the note that the session moved,
// the file is not written again, and the session ends ok once, its audit saying it
// resumed.
func TestFleetClaudeCodeResumesItsConversation(t *testing.T) {
	t.Parallel()
	api := agenttest.NewAnthropic(t,
		[]agenttest.Block{{Tool: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "first turn\n"}}},
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "touch second.txt", "description": "second turn"}}},
		[]agenttest.Block{{Text: "resumed and done"}})
	f := startFleet(t, "")
	nc, js := f.conn(t)
	results := events[map[string]any](t, nc, wire.EventSubject("claude", "t-claude", "result"))
	asked := events[map[string]any](t, nc, wire.EventSubject("claude", "t-claude", "approval"))
	repo := gitRepo(t)
	body1, ws1, _ := claudeNode(t, api, repo, "")
	victim := f.nodeWith(t, "agents1", body1)
	submitTasks(t, js, "claude", "Write notes.txt, then touch second.txt.", "t-claude")
	for bash := false; !bash; {
		select {
		case a := <-asked:
			bash = strings.HasPrefix(fmt.Sprint(a["description"]), "Bash: touch second.txt")
		case <-time.After(2 * time.Minute):
			t.Fatalf("Claude Code did not ask to run its second turn's command:\n%s\nthe model's last request: %s", victim.stderr, api.LastMessages())
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws1, "agents1", "claude", "work", "t-claude.0", "notes.txt")); err != nil || string(b) != "first turn\n" {
		t.Fatalf("the first turn wrote %q in its checkout (%v)", b, err)
	}
	cps, err := store.OpenCheckpoints(context.Background(), js, 3)
	if err != nil {
		t.Fatal(err)
	}
	proctest.EventuallyWithin(t, time.Minute, "a checkpoint holding the first turn's tool result", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := cps.Find(ctx, "t-claude", 0)
		if err != nil {
			return false
		}
		tr, err := cps.Part(ctx, c, "transcript")
		return err == nil && bytes.Contains(tr, []byte(`"tool_result"`))
	})
	kill(t, victim)

	body2, ws2, config2 := claudeNode(t, api, repo, "yes")
	agents2 := f.nodeWith(t, "agents2", body2)
	select {
	case res := <-results:
		if res["text"] != "resumed and done" {
			t.Errorf("result %v", res)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the session did not end on agents2:\n%s", agents2.stderr)
	}
	last := string(api.LastMessages())
	for _, want := range []string{"Write notes.txt, then touch second.txt.", `"name":"Write"`, `"tool_result"`, "moved to another node"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's last request does not carry %q: the conversation did not come along:\n%s", want, last)
		}
	}
	if strings.Count(last, `"name":"Write"`) != 1 {
		t.Errorf("the file was written again after the resume:\n%s", last)
	}
	if found, _ := filepath.Glob(filepath.Join(config2, "projects", "*", "*.jsonl")); len(found) == 0 {
		t.Errorf("agents2's Claude Code keeps no transcript under %s", config2)
	}

	var resumed, ended, writes []wire.AuditRecord
	proctest.EventuallyWithin(t, 30*time.Second, "the session's end in the audit", func() bool {
		resumed, ended, writes = nil, nil, nil
		for _, r := range auditRecords(t, js) {
			switch {
			case r.Session != "t-claude":
			case r.Kind == wire.EventSessionResumed:
				resumed = append(resumed, r)
			case r.Kind == "session.ended":
				ended = append(ended, r)
			case r.Kind == "answer" && strings.HasPrefix(r.Text, "Write: "):
				writes = append(writes, r)
			}
		}
		return len(ended) > 0
	})
	if len(ended) != 1 || ended[0].Outcome != "ok" || ended[0].Node != "agents2" {
		t.Errorf("ended %+v; want once, ok, on agents2", ended)
	}
	if len(resumed) != 1 || resumed[0].Node != "agents2" || !strings.Contains(resumed[0].Reason, "taken on agents1 in attempt 0") {
		t.Errorf("resumed %+v; want one record, on agents2, from a checkpoint of agents1", resumed)
	}
	if len(writes) != 1 || writes[0].Node != "agents1" {
		t.Errorf("the Write approval was answered %d times (%+v); want once, on agents1", len(writes), writes)
	}
	// The first turn's file came along in the checkout, and is on the session's branch
	// as agents2 ended it.
	show := exec.Command("git", "--git-dir="+filepath.Join(ws2, "agents2", "claude", "work", "mirror.git"), "show", "agentmux/t-claude:notes.txt")
	if out, err := show.CombinedOutput(); err != nil || string(out) != "first turn\n" {
		t.Errorf("notes.txt on the session's branch: %q (%v)\n%s", out, err, agents2.stderr)
	}
}
