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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/invariants"
	"github.com/agentmux/agentmux/sim"
	"github.com/agentmux/agentmux/wire"
)

//go:embed nodeharness/harness.mjs
var nodeHarness []byte

// The Node.js harness's audit stream: the same configuration as agentmux's, on its own
// subjects.
const (
	nodeAuditStream  = "BENCH_NODE_AUDIT"
	nodeAuditSubject = "agentmux.bench.audit"
)

// runNode runs the scenario under the Node.js harness (process agents only), which does
// agentmux's work with nats.js on b's server, as id: events, asks to B1's responder, audit
// records to JetStream.
func runNode(ctx context.Context, c *Config, b *bus.Bus, id bus.Identity, progress Progress) (*System, error) {
	modules, err := c.nodeModules()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentmux-node-harness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "harness.mjs")
	if err := os.WriteFile(script, nodeHarness, 0o600); err != nil {
		return nil, err
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		return nil, err
	}
	stream, err := b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: nodeAuditStream, Subjects: []string{nodeAuditSubject + ".>"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		return nil, fmt.Errorf("bench: the Node.js harness's audit stream: %w", err)
	}
	defer func() { _ = b.JS.DeleteStream(context.Background(), nodeAuditStream) }()
	arg, _ := json.Marshal(map[string]any{"command": c.AgentCommand[0], "args": c.AgentCommand[1:], "sessions": c.Sessions,
		"rate": c.Rate, "prompt": c.plan().Prompt(), "nats": b.ClientURL(), "user": id.User, "pass": id.Password, "ask": b1Subject, "audit": nodeAuditSubject,
		"question_timeout_ms": c.QuestionTimeout.Milliseconds()})
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
		Reports       []*sim.LoadReport `json:"reports"`
		Failures      []string          `json:"failures"`
		AuditFailures int               `json:"audit_failures"`
		CPU           float64           `json:"cpu_s"` // the harness's own, without its agents
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("bench: the Node.js harness's report: %w", err)
	}
	u := readUsage().since(before)
	col := newCollector("node")
	for _, r := range res.Reports {
		col.add(r)
	}
	for _, f := range res.Failures {
		col.fail(f)
	}
	if res.AuditFailures > 0 {
		col.fail(fmt.Sprintf("%d audit records not acknowledged", res.AuditFailures))
	}
	if err := checkNodeAudit(ctx, stream, c, len(res.Reports)+len(res.Failures)); err != nil {
		col.fail(err.Error())
	}
	progress("node", c.Sessions, c.Sessions)
	// Its harness CPU: Node's own, and this process's meanwhile (the NATS server, which
	// agentmux's figure includes too).
	u.self += res.CPU
	return col.system(wall, u), nil
}

// checkNodeAudit checks that the harness wrote every record agentmux would have: per
// session its start and end, and an answer per request standing for its request or
// after its request record, held to the invariants agentmux's audit is held to.
func checkNodeAudit(ctx context.Context, stream jetstream.Stream, c *Config, sessions int) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("the Node.js harness's audit stream: %w", err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return fmt.Errorf("the Node.js harness's audit stream: %w", err)
	}
	var records []wire.AuditRecord
	kinds := map[string]int{}
	for uint64(len(records)) < info.State.Msgs {
		batch, err := cons.Fetch(int(info.State.Msgs)-len(records), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("the Node.js harness's audit stream: %w", err)
		}
		n := len(records)
		for m := range batch.Messages() {
			var r wire.AuditRecord
			if err := json.Unmarshal(m.Data(), &r); err != nil {
				return fmt.Errorf("the Node.js harness's audit record %s: %w", m.Data(), err)
			}
			records = append(records, r)
			kinds[r.Kind]++
		}
		if len(records) == n {
			return fmt.Errorf("the Node.js harness's audit: read %d of %d records", n, info.State.Msgs)
		}
	}
	p := c.plan()
	if want := sessions * (p.Questions + p.Approvals + p.Unrouted); kinds["session.started"] != sessions || kinds["session.ended"] != sessions || kinds["answer"] != want {
		return fmt.Errorf("the Node.js harness's audit holds %v; want %d sessions started and ended, %d answers", kinds, sessions, want)
	}
	if v := invariants.Violations(records, nil); len(v) > 0 {
		return fmt.Errorf("the Node.js harness's audit breaks the invariants: %s", strings.Join(v, "; "))
	}
	return nil
}
