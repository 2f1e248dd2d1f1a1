package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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
