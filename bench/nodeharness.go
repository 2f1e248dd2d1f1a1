package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmux/agentmux/sim"
)

//go:embed nodeharness/harness.mjs
var nodeHarness []byte

// runNode runs the scenario under the Node.js harness (process agents only).
func runNode(ctx context.Context, c *Config, progress Progress) (*System, error) {
	dir, err := os.MkdirTemp("", "agentmux-node-harness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "harness.mjs")
	if err := os.WriteFile(script, nodeHarness, 0o600); err != nil {
		return nil, err
	}
	arg, _ := json.Marshal(map[string]any{"command": c.AgentCommand[0], "args": c.AgentCommand[1:], "sessions": c.Sessions,
		"rate": c.Rate, "prompt": c.plan().Prompt()})
	cmd := exec.CommandContext(ctx, c.NodeBinary, script, string(arg))
	cmd.Env = agentEnv(c) // the harness's agents inherit it
	var stderr strings.Builder
	cmd.Stderr = &stderr
	progress("node", 0, c.Sessions)
	before := readUsage()
	t0 := time.Now()
	out, err := cmd.Output()
	wall := time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("bench: the Node.js harness (%s): %w: %s", c.NodeBinary, err, stderr.String())
	}
	var res struct {
		Reports  []*sim.LoadReport `json:"reports"`
		Failures []string          `json:"failures"`
		CPU      float64           `json:"cpu_s"` // the harness's own, without its agents
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("bench: the Node.js harness's report: %w", err)
	}
	col := newCollector("node")
	for _, r := range res.Reports {
		col.add(r)
	}
	for _, f := range res.Failures {
		col.fail(f)
	}
	progress("node", c.Sessions, c.Sessions)
	u := readUsage().since(before)
	u.self = res.CPU
	return col.system(wall, u), nil
}
