package node

import (
	"strings"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// TestAResumeIsAimedAsAsked: a resume on this node aims the task queued again at it;
// one on any node clears the aim an earlier resume left on the task it copies; one on
// this node for a host it does not run is refused, saying what it runs.
func TestAResumeIsAimedAsAsked(t *testing.T) {
	f := start(t, simHost("w", ""))
	task := &wire.Task{ID: "t-1", Host: "w", Prompt: "p", Node: "gone"}
	if d := f.n.aim(task, "w", wire.ResumeRequest{Session: "t-1"}); d != nil || task.Node != "" {
		t.Errorf("resumed on any node: %+v, the task aimed at %q; want it aimed at none", d, task.Node)
	}
	if d := f.n.aim(task, "w", wire.ResumeRequest{Session: "t-1", Node: f.n.Name}); d != nil || task.Node != f.n.Name {
		t.Errorf("resumed on %s: %+v, the task aimed at %q", f.n.Name, d, task.Node)
	}
	if d := f.n.aim(task, "other", wire.ResumeRequest{Session: "t-1", Node: f.n.Name}); d == nil || !strings.Contains(d.Error, "does not run host other (it runs w)") {
		t.Errorf("resumed on %s for a host it does not run: %+v; want it refused", f.n.Name, d)
	}
}
