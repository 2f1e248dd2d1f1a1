package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
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

// moving is a vendor's agent whose session moves: on each node a host of its own table
// (a home and a workspace dir of its own, each session in a worktree of repo). Its
// first turn writes notes.txt with an approval whose text holds approve; its second
// waits on one holding "touch second.txt", which nobody answers on the first node and a
// rule approves on the second.
type moving struct {
	host        string
	table       func(t *testing.T, repo, workspaces, home string) string
	approve     string
	toolResult  string        // in its transcript once the first turn's tool result is
	lastRequest func() string // the model's latest request
	firstTurn   string        // in it once: the first turn's tool call
	config      string
	// drain moves it with SIGTERM, the node handing it over at once; else SIGKILL.
	drain bool
	// acp: its text comes in its partials, and its result says how the turn ended.
	acp bool
}

// node is the manifest of a node running m, and its workspace dir and home.
func (m moving) node(t *testing.T, repo string, second bool) (body, workspaces, home string) {
	home, workspaces = t.TempDir(), t.TempDir()
	waits, rules := "nobody", fmt.Sprintf(`{ type = "approval", match = %q, answer = "yes" }`, m.approve)
	if second {
		waits, rules = "ops", rules+`, { type = "approval", match = "touch second.txt", answer = "yes" }`
	}
	return m.table(t, repo, workspaces, home) + fmt.Sprintf(`stop_grace = "2s"
question_timeout = "10m"
checkpoint_interval = "1s"
workspace = "worktree"
working_dir = %q
workspace_dir = %q
[supervisors.ops]
strategy = "rule"
rules = [%s]
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "touch second.txt"
supervisor = %q
[[routes]]
supervisor = "ops"
`, repo, workspaces, rules, waits), workspaces, home
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

// TestFleetVendorAgentsResumeTheirConversation: the real Claude Code, the real
// claude-agent-acp (an ACP agent, over session/resume), the real Gemini CLI (ACP, over
// session/load) and the real Codex write a file
// in their first turn, then wait on an approval nobody gives; the node is killed with
// SIGKILL (Claude Code's and the Gemini CLI's), or drained with SIGTERM and a grace of ten minutes (the
// others'), which hands the session over at once. The node that takes the task,
// sharing no directory with the first but the repository, puts the checkpointed
// transcript where its agent looks and resumes the conversation, in a checkout holding
// what the first turn wrote: the model's next request carries the first turn and the
// note that the session moved, the file is not written again, and the session ends ok
// once, its audit saying it resumed and its branch holding the file.
func TestFleetVendorAgentsResumeTheirConversation(t *testing.T) {
	t.Parallel()
	anthropic := agenttest.NewAnthropic(t,
		[]agenttest.Block{{Tool: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "first turn\n"}}},
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "touch second.txt", "description": "second turn"}}},
		[]agenttest.Block{{Text: "resumed and done"}})
	viaACP := agenttest.NewAnthropic(t,
		[]agenttest.Block{{Tool: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "first turn\n"}}},
		[]agenttest.Block{{Tool: "Bash", Input: map[string]any{"command": "touch second.txt", "description": "second turn"}}},
		[]agenttest.Block{{Text: "resumed and done"}})
	gemini := agenttest.NewGeminiAPI(t,
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "printf 'first turn\\n' > notes.txt", "description": "first turn"}},
		agenttest.Call{Name: "run_shell_command", Args: map[string]any{"command": "touch second.txt", "description": "second turn"}},
		agenttest.Call{Text: "resumed and done"})
	responses := agenttest.NewResponses(t, agenttest.Exec("printf 'first turn\\n' > notes.txt"), agenttest.Exec("touch second.txt"),
		agenttest.Call{Text: "resumed and done"})
	for _, m := range []moving{{
		host: "claude",
		table: func(t *testing.T, _, _, home string) string {
			return fmt.Sprintf("[hosts.claude]\ncommand = %q\ndialect = \"claude-code\"\nenv = { HOME = %q, CLAUDE_CONFIG_DIR = %q, ANTHROPIC_BASE_URL = %q, ANTHROPIC_API_KEY = \"sk-test\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }\n",
				agenttest.Claude(t), home, filepath.Join(home, ".claude"), anthropic.URL())
		},
		approve: "^Write: ", toolResult: `"tool_result"`,
		lastRequest: func() string { return string(anthropic.LastMessages()) }, firstTurn: `"name":"Write"`, config: ".claude/projects/*",
	}, {
		host: "acp",
		table: func(t *testing.T, _, _, home string) string {
			return fmt.Sprintf("[hosts.acp]\ncommand = %q\ndialect = \"acp\"\nenv = { HOME = %q, CLAUDE_CONFIG_DIR = %q, ANTHROPIC_BASE_URL = %q, ANTHROPIC_API_KEY = \"sk-test\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }\n",
				agenttest.NPMAgent(t, "@agentclientprotocol/claude-agent-acp", agenttest.ACPVersion, "claude-agent-acp"), home, filepath.Join(home, ".claude"), viaACP.URL())
		},
		approve: `notes\.txt`, toolResult: `"tool_result"`,
		lastRequest: func() string { return string(viaACP.LastMessages()) }, firstTurn: `"name":"Write"`, config: ".claude/projects/*", drain: true, acp: true,
	}, {
		host: "gemini",
		table: func(t *testing.T, _, _, home string) string {
			return fmt.Sprintf("[hosts.gemini]\ncommand = %q\nargs = [\"--acp\"]\ndialect = \"acp\"\nenv = { HOME = %q, GOOGLE_GEMINI_BASE_URL = %q, GEMINI_API_KEY = \"test-key\", GEMINI_CLI_NO_RELAUNCH = \"true\" }\n",
				agenttest.Gemini(t), home, gemini.URL())
		},
		approve: "printf 'first turn", toolResult: `"functionResponse"`,
		lastRequest: gemini.LastContents, firstTurn: `printf 'first turn`, config: ".gemini/tmp/*/chats", acp: true,
	}, {
		host: "codex",
		table: func(t *testing.T, _, _, home string) string {
			args, _ := json.Marshal(append(agenttest.CodexProvider(responses), "-c", `sandbox_mode="danger-full-access"`))
			return fmt.Sprintf("[hosts.codex]\ncommand = %q\nargs = %s\ndialect = \"codex\"\nenv = { HOME = %q, CODEX_HOME = %q, FAKE_MODEL_KEY = \"sk-test\" }\n",
				agenttest.Codex(t), args, home, home)
		},
		approve: "printf 'first turn", toolResult: `function_call_output`,
		lastRequest: responses.LastInput, firstTurn: `printf 'first turn`, config: "sessions/*/*/*", drain: true,
	}} {
		t.Run(m.host, func(t *testing.T) {
			t.Parallel()
			m.resumes(t)
		})
	}
}

func (m moving) resumes(t *testing.T) {
	const session = "t-moves"
	f := startFleet(t, "")
	nc, js := f.conn(t)
	results := events[map[string]any](t, nc, wire.EventSubject(m.host, session, "result"))
	asked := events[map[string]any](t, nc, wire.EventSubject(m.host, session, "approval"))
	repo := gitRepo(t)
	body1, ws1, _ := m.node(t, repo, false)
	victim := f.nodeOn(t, f.write(t, "agents1.toml", f.header+body1), "agents1", "--grace", "10m")
	submitTasks(t, js, m.host, "Write notes.txt, then touch second.txt.", session)
	for waiting := false; !waiting; {
		select {
		case a := <-asked:
			waiting = strings.Contains(fmt.Sprint(a["description"]), "touch second.txt")
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s did not ask for its second turn:\n%s\nthe model's last request: %s", m.host, victim.stderr, m.lastRequest())
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws1, "agents1", m.host, "work", session+".0", "notes.txt")); err != nil || string(b) != "first turn\n" {
		t.Fatalf("the first turn wrote %q in its checkout (%v)", b, err)
	}
	cps, err := store.OpenCheckpoints(context.Background(), js, 3)
	if err != nil {
		t.Fatal(err)
	}
	proctest.EventuallyWithin(t, time.Minute, "a checkpoint holding the first turn's tool result", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := cps.Find(ctx, session, 0)
		if err != nil {
			return false
		}
		tr, err := cps.Part(ctx, c, "transcript")
		return err == nil && bytes.Contains(tr, []byte(m.toolResult))
	})
	body2, ws2, home2 := m.node(t, repo, true)
	if !m.drain {
		kill(t, victim)
	}
	agents2 := f.nodeWith(t, "agents2", body2)
	if m.drain {
		if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-victim.done:
		case <-time.After(time.Minute):
			t.Fatalf("the drained node did not exit within a minute of SIGTERM (its grace is 10m):\n%s", victim.stderr)
		}
	}
	select {
	case res := <-results:
		// An ACP agent's text comes in its partials; its result says how the turn ended.
		if fmt.Sprint(res["text"]) != "resumed and done" && (!m.acp || res["stop_reason"] != "end_turn") {
			t.Errorf("result %v", res)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the session did not end on agents2:\n%s", agents2.stderr)
	}
	last := m.lastRequest()
	for _, want := range []string{"Write notes.txt, then touch second.txt.", m.firstTurn, "moved to another node"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's last request does not carry %q: the conversation did not come along:\n%s", want, last)
		}
	}
	if strings.Count(last, m.firstTurn) != 1 {
		t.Errorf("the first turn's tool was called again after the resume:\n%s", last)
	}
	if found, _ := filepath.Glob(filepath.Join(home2, m.config, "*.jsonl")); len(found) == 0 {
		t.Errorf("agents2's %s keeps no transcript under %s", m.host, filepath.Join(home2, m.config))
	}
	var resumed, ended, firsts []wire.AuditRecord
	proctest.EventuallyWithin(t, 30*time.Second, "the session's end in the audit", func() bool {
		resumed, ended, firsts = nil, nil, nil
		for _, r := range auditRecords(t, js) {
			switch {
			case r.Session != session:
			case r.Kind == wire.EventSessionResumed:
				resumed = append(resumed, r)
			case r.Kind == "session.ended" && r.Outcome == wire.OutcomeHandedOver && m.drain && r.Node == "agents1":
			case r.Kind == "session.ended":
				ended = append(ended, r)
			case r.Kind == "answer" && regexp.MustCompile(m.approve).MatchString(r.Text):
				firsts = append(firsts, r)
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
	if len(firsts) != 1 || firsts[0].Node != "agents1" {
		t.Errorf("the first turn's approval was answered %d times (%+v); want once, on agents1", len(firsts), firsts)
	}
	// What the first turn wrote came along in the checkout, and is on the session's
	// branch as agents2 ended it.
	show := exec.Command("git", "--git-dir="+filepath.Join(ws2, "agents2", m.host, "work", "mirror.git"), "show", "agentmux/"+session+":notes.txt")
	if out, err := show.CombinedOutput(); err != nil || string(out) != "first turn\n" {
		t.Errorf("notes.txt on the session's branch: %q (%v)\n%s", out, err, agents2.stderr)
	}
}

// counter is a native agent that counts, a checkpoint at each step; in its first attempt
// it never ends. Brought back, it counts three more from its checkpoint's state and
// says where it started.
const counter = `import json, sys, time
msg = json.loads(sys.stdin.readline())
r = msg.get("resume")
n = r["state"]["done"] if r else 0
start = n
while not r or n < start + 3:
    time.sleep(0.2)
    n += 1
    print(json.dumps({"type": "checkpoint", "state": {"done": n}}), flush=True)
print(json.dumps({"type": "result", "text": json.dumps({"from": start, "done": n, "checkpoint": r["checkpoint"]})}), flush=True)
`

// TestFleetDrainHandsSessionsOver: SIGTERM to a node with a grace of ten minutes hands
// its running session to the other node at its next checkpoint: the drained node exits
// at once, well within its grace, and the session goes on from that checkpoint, not from
// the start, ending ok once; the audit shows the first attempt handed over and one
// resume.
func TestFleetDrainHandsSessionsOver(t *testing.T) {
	t.Parallel()
	f := startFleet(t, fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nstop_grace = \"2s\"\n", counter))
	nc, js := f.conn(t)
	results := events[map[string]any](t, nc, wire.EventSubject("w", "t-handover", "result"))
	drained := f.nodeOn(t, f.manifest, "agents1", "--grace", "10m")
	submitTasks(t, js, "w", "count", "t-handover")
	proctest.EventuallyWithin(t, time.Minute, "the session's checkpoints", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := store.ListCheckpoints(ctx, nc, "t-handover")
		return err == nil && len(list) >= 2
	})
	agents2 := f.node(t, "agents2")
	if err := drained.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drained.done:
	case <-time.After(time.Minute):
		t.Fatalf("the drained node did not exit within a minute of SIGTERM (its grace is 10m):\n%s", drained.stderr)
	}
	if code := drained.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Errorf("the drained node exited %d:\n%s", code, drained.stderr)
	}
	var told struct{ From, Done, Checkpoint int }
	select {
	case res := <-results:
		if err := json.Unmarshal([]byte(fmt.Sprint(res["text"])), &told); err != nil {
			t.Fatalf("result %v: %v", res, err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the session did not end on agents2:\n%s", agents2.stderr)
	}
	if told.From < 2 || told.Checkpoint != told.From || told.Done != told.From+3 {
		t.Errorf("the agent went on from %d (checkpoint %d) to %d; want from its latest checkpoint, at least the second, and three more", told.From, told.Checkpoint, told.Done)
	}
	var resumed, ended []wire.AuditRecord
	proctest.EventuallyWithin(t, 30*time.Second, "the session's end in the audit", func() bool {
		resumed, ended = nil, nil
		for _, r := range auditRecords(t, js) {
			switch {
			case r.Session != "t-handover":
			case r.Kind == wire.EventSessionResumed:
				resumed = append(resumed, r)
			case r.Kind == "session.ended":
				ended = append(ended, r)
			}
		}
		return len(ended) == 2
	})
	slices.SortFunc(ended, func(a, b wire.AuditRecord) int { return a.Attempt - b.Attempt })
	if len(ended) != 2 || ended[0].Outcome != wire.OutcomeHandedOver || ended[0].Node != "agents1" || ended[1].Outcome != "ok" || ended[1].Node != "agents2" {
		t.Errorf("ended %+v; want handed over on agents1, then ok on agents2", ended)
	}
	if len(resumed) != 1 || resumed[0].Node != "agents2" {
		t.Errorf("resumed %+v; want once, on agents2", resumed)
	}
}

// crasher is a native agent that takes a step, checkpoints it, and dies at once in its
// first attempt; brought back, it says where it went on from.
const crasher = `import json, sys
msg = json.loads(sys.stdin.readline())
r = msg.get("resume")
if not r:
    print(json.dumps({"type": "checkpoint", "state": {"done": [1]}}), flush=True)
    sys.exit(3)
print(json.dumps({"type": "result", "text": json.dumps({"from": r["checkpoint"], "done": r["state"]["done"] + [2]})}), flush=True)
`

// TestACrashedAttemptGoesOnFromItsCheckpoint: a native agent that checkpointed and then
// crashed at once is retried (retries = 1) on the same node from that checkpoint, not
// from the start: the attempt's end waits for its checkpoint to be written.
func TestACrashedAttemptGoesOnFromItsCheckpoint(t *testing.T) {
	t.Parallel()
	manifest, up := soloNode(t, fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nretries = 1\n", crasher))
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-crash", "--follow", "w", "two steps")
	if code := follow.wait(t, time.Minute); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s\n%s", code, follow.stdout, follow.stderr, up.stderr)
	}
	var res struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(follow.stdout.String()), &res); err != nil || !strings.Contains(res.Text, `"from": 1`) || !strings.Contains(res.Text, `"done": [1, 2]`) {
		t.Fatalf("result %s (%v); want the second attempt going on from checkpoint 1", follow.stdout, err)
	}
}
