package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// checkpointer is a native agent that takes three checkpoints, the last over
// max_checkpoint_bytes, then ends.
const checkpointer = `import json, sys
msg = json.loads(sys.stdin.readline())
print(json.dumps({"type": "checkpoint", "state": {"step": 1}}), flush=True)
print(json.dumps({"type": "checkpoint", "state": {"step": 2, "notes": "the spec is in docs/"}}), flush=True)
print(json.dumps({"type": "checkpoint", "state": {"step": 3, "big": "x" * 5000}}), flush=True)
print(json.dumps({"type": "result", "text": "done"}), flush=True)
`

// TestANativeAgentsCheckpoints: a native agent's checkpoints are kept in the fleet,
// listed for anyone who reads the bus, and exported, state and place, for an operator;
// one over max_checkpoint_bytes is not kept, and its session's events say why.
func TestANativeAgentsCheckpoints(t *testing.T) {
	t.Parallel()
	manifest, _ := soloNode(t, fmt.Sprintf(`[checkpoints]
max_checkpoint_bytes = 4096
[hosts.w]
command = "python3"
args = ["-c", %q]
`, checkpointer))
	follow := runtimeProc(t, "submit", "-c", manifest, "--id", "t-cp", "--follow", "w", "write the spec")
	if code := follow.wait(t, time.Minute); code != exitOK {
		t.Fatalf("submit: exit %d\n%s%s", code, follow.stdout, follow.stderr)
	}

	var listed []wire.Checkpoint
	proctest.Eventually(t, "the session's two checkpoints listed", func() bool {
		list := runtimeProc(t, "checkpoints", "-c", manifest, "t-cp", "-o", "json")
		if list.wait(t, 30*time.Second) != exitOK {
			return false
		}
		listed = nil
		for _, line := range strings.Split(strings.TrimSpace(list.stdout.String()), "\n") {
			var c wire.Checkpoint
			if json.Unmarshal([]byte(line), &c) == nil {
				listed = append(listed, c)
			}
		}
		return len(listed) == 2
	})
	if listed[0].Seq != 1 || listed[1].Seq != 2 || listed[1].Host != "w" || listed[1].Why != "agent" || len(listed[1].Parts) != 2 {
		t.Errorf("listed %+v; want seqs 1 and 2 of host w, each with its place and state", listed)
	}
	export := func(args ...string) string {
		t.Helper()
		p := runtimeProc(t, append([]string{"checkpoints", "export", "-c", manifest, "t-cp"}, args...)...)
		if code := p.wait(t, time.Minute); code != exitOK {
			t.Fatalf("checkpoints export %v: exit %d\n%s", args, code, p.stderr)
		}
		return p.stdout.String()
	}
	var state struct {
		Step  int    `json:"step"`
		Notes string `json:"notes"`
	}
	if got := export(); json.Unmarshal([]byte(got), &state) != nil || state.Step != 2 || state.Notes != "the spec is in docs/" {
		t.Errorf("the latest state exported: %q; want step 2's", got)
	}
	if got := export("--seq", "1"); !strings.Contains(got, `"step": 1`) {
		t.Errorf("checkpoint 1's state: %q", got)
	}
	var place wire.SessionPlace
	if got := export("--part", "place"); json.Unmarshal([]byte(got), &place) != nil || place.Prompt != "write the spec" || place.Task != "t-cp" {
		t.Errorf("the latest place: %q; want the session's prompt and task", got)
	}
	missing := runtimeProc(t, "checkpoints", "export", "-c", manifest, "t-cp", "--seq", "3")
	if code := missing.wait(t, time.Minute); code != exitError || !strings.Contains(missing.stderr.String(), "no such checkpoint") {
		t.Errorf("export of the checkpoint not kept: exit %d, %s; want it said there is none", code, missing.stderr)
	}
	logs := runtimeProc(t, "logs", "-c", manifest, "t-cp", "-o", "json")
	if code := logs.wait(t, 30*time.Second); code != exitOK || !strings.Contains(logs.stdout.String(), wire.EventCheckpointFailed) ||
		!strings.Contains(logs.stdout.String(), "max_checkpoint_bytes (4096)") {
		t.Errorf("logs: exit %d\n%s\nwant a checkpoint.failed saying the state was over max_checkpoint_bytes", code, logs.stdout)
	}
}

// soloNode starts `agentmux up` alone, on a manifest of its own: an embedded server on a
// free port with a store of its own, then body.
func soloNode(t *testing.T, body string) (manifest string, up *proc) {
	t.Helper()
	m := fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = %q\n[metrics]\naddr = \"127.0.0.1:0\"\n", proctest.FreePort(t), filepath.Join(t.TempDir(), "store")) + body
	manifest = filepath.Join(t.TempDir(), "agentmux.toml")
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up = startProc(t, exec.Command(os.Args[0], "up", "-c", manifest))
	until(t, "agentmux up", up.stderr, "node up")
	return manifest, up
}
