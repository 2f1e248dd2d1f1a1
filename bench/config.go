package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmux/agentmux/sim"
)

// Agent kinds.
const (
	AgentProcess = "process" // real subprocesses on real pipes
	AgentInProc  = "inproc"  // the same scripted agent on pipes inside this process
)

// Config is one load scenario.
type Config struct {
	Sessions int     // sessions in all; each has its own agent, all may run at once
	Rate     float64 // session arrivals per second; 0: all at once

	Progress     int           // progress lines per session
	ProgressRate float64       // per session, lines per second; 0: back to back
	Questions    int           // per session
	Approvals    int           // per session
	Think        time.Duration // between a session's requests
	Unrouted     int           // per session: questions nobody answers, for default lateness
	// Checkpoints per session, one after each request, each a state of CheckpointBytes.
	Checkpoints, CheckpointBytes int

	QuestionTimeout time.Duration     // host question_timeout, and the unrouted questions' timeout_ms
	Agent           string            // AgentProcess or AgentInProc
	AgentCommand    []string          // the process agent: a command that runs sim.Run on stdio
	NodeCommand     []string          // a fleet node for the scaling curve: a command that runs RunNodeProcess
	AgentEnv        map[string]string // added to the process agents' environment

	NATSURL           string // empty: an embedded server
	RemoteSupervisors bool   // supervisors already run elsewhere (on NATSURL)
	// Nodes ≥ 2 also runs the scenario on a fleet of that many nodes in one NATS
	// cluster in this process: agents on one, supervisors on the others.
	Nodes int
	// Replicated also runs the scenario as the single node does, on a cluster of three
	// servers in this process: the audit and every stream and bucket at three replicas.
	Replicated bool
	Timeout    time.Duration

	Baselines   bool   // also run B0, B1, B1a, B2, the wire's floor and the Node.js harness
	NodeBinary  string // node, for the Node.js harness
	NodeModules string // the harness's node_modules (nats.js): `npm ci --prefix bench/nodeharness`
	Probes      bool   // also measure memory per session, idle CPU and start rate
	// KeepEvents keeps every event in the history stream, as a node does by default
	// ([audit] keep_events): what it costs is in the figures.
	KeepEvents    bool
	ProbeSessions int // sessions of the memory, idle-CPU and start-rate probes
	// Peers also runs the scenario on these systems users would pick instead
	// (PeerTemporal, PeerRestate), each by PeerCommand with --peer and its name: the
	// bench/peers module's cmd/peerload, which reads the scenario as JSON on stdin.
	Peers       []string
	PeerCommand []string
}

// Defaults is a short scenario that runs in seconds on two cores.
func Defaults() Config {
	return Config{
		Sessions: 200, Progress: 200, Questions: 3, Approvals: 1, Unrouted: 1,
		Think: 20 * time.Millisecond, QuestionTimeout: 500 * time.Millisecond,
		Agent: AgentInProc, Timeout: 5 * time.Minute, KeepEvents: true, NodeBinary: "node", NodeModules: filepath.Join("bench", "nodeharness", "node_modules"), ProbeSessions: 500,
	}
}

// Validate reports a scenario that cannot run, saying which flag to fix.
func (c *Config) Validate() error {
	switch {
	case c.Sessions <= 0:
		return fmt.Errorf("bench: sessions must be at least 1")
	case c.Rate < 0 || c.ProgressRate < 0:
		return fmt.Errorf("bench: rates cannot be negative")
	case c.Agent != AgentProcess && c.Agent != AgentInProc:
		return fmt.Errorf("bench: agent %q: use %s or %s", c.Agent, AgentProcess, AgentInProc)
	case c.Agent == AgentProcess && len(c.AgentCommand) == 0:
		return fmt.Errorf("bench: the process agent needs a command")
	case c.Unrouted > 0 && c.QuestionTimeout <= 0:
		return fmt.Errorf("bench: unrouted questions need a question timeout")
	case c.RemoteSupervisors && c.NATSURL == "":
		return fmt.Errorf("bench: remote supervisors need the NATS URL they listen on")
	case c.Nodes == 1 || c.Nodes < 0:
		return fmt.Errorf("bench: --nodes %d: a fleet needs at least 2 nodes (one for agents, the rest for supervisors); 0 runs none", c.Nodes)
	case (c.Nodes > 0 || c.Replicated) && c.NATSURL != "":
		return fmt.Errorf("bench: --nodes and --replicated run their own cluster; drop --nats")
	case len(c.Peers) > 0 && len(c.PeerCommand) == 0:
		return fmt.Errorf("bench: the peers need the command that runs them (bench/peers' cmd/peerload)")
	case c.badPeer() != "":
		return fmt.Errorf("bench: --peers: no peer %q: use %s or %s", c.badPeer(), PeerTemporal, PeerRestate)
	case c.Baselines && c.Agent == AgentProcess:
		_, err := c.nodeModules()
		return err
	}
	return nil
}

// begin checks the scenario and bounds ctx by its timeout.
func (c *Config) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	if c.Timeout <= 0 {
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	return ctx, cancel, nil
}

// badPeer is the first of the scenario's peers that is not one, or "".
func (c *Config) badPeer() string {
	for _, p := range c.Peers {
		if p != PeerTemporal && p != PeerRestate {
			return p
		}
	}
	return ""
}

// nodeModules is the Node.js harness's node_modules as an absolute path, checked to
// hold nats.js.
func (c *Config) nodeModules() (string, error) {
	dir, err := filepath.Abs(c.NodeModules)
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "@nats-io", "transport-node"))
	}
	if err != nil {
		return "", fmt.Errorf("bench: the Node.js harness needs nats.js in %s (%w): run `npm ci --prefix bench/nodeharness`, or pass --node-modules", c.NodeModules, err)
	}
	return dir, nil
}

// plan is what every session's agent does.
func (c *Config) plan() *sim.Load {
	return &sim.Load{Progress: c.Progress, ProgressRate: c.ProgressRate, Questions: c.Questions, Approvals: c.Approvals,
		Every: sim.Duration(c.Think), Unrouted: c.Unrouted, DefaultAfter: sim.Duration(c.QuestionTimeout),
		Checkpoints: c.Checkpoints, CheckpointBytes: c.CheckpointBytes}
}

// arrival is when session i is meant to start, after t0.
func (c *Config) arrival(t0 time.Time, i int) time.Time {
	if c.Rate <= 0 {
		return t0
	}
	return t0.Add(time.Duration(float64(i) / c.Rate * float64(time.Second)))
}

// sleepUntil returns at at, or ctx's error if it ends first.
func sleepUntil(ctx context.Context, at time.Time) error {
	wait := time.Until(at)
	if wait <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nextArrival says when the next of the scenario's sessions arrives, submitted being
// how many have: now, or later on timer's channel (reset for it); neither once all
// have arrived.
func (c *Config) nextArrival(t0 time.Time, submitted int, timer *time.Timer) (later <-chan time.Time, now bool) {
	if submitted >= c.Sessions {
		return nil, false
	}
	wait := time.Until(c.arrival(t0, submitted))
	if wait <= 0 {
		return nil, true
	}
	timer.Reset(wait)
	return timer.C, false
}
