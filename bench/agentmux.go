package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/sim"
)

// Progress is told how far a system has come.
type Progress func(system string, done, total int)

// The hosts of the load manifest.
const (
	loadHost   = "load"
	warmupHost = "warmup"
)

// manifest is the scenario's manifest: one host of load agents, a static supervisor
// that answers at once, and one nobody runs for the unrouted questions.
func (c *Config) manifest() string {
	m := ""
	if c.NATSURL != "" {
		m = fmt.Sprintf("[nats]\nurl = %q\n", c.NATSURL)
	}
	command, args := "inproc", []string{}
	if c.Agent == AgentProcess {
		command, args = c.AgentCommand[0], c.AgentCommand[1:]
	}
	argsJSON, _ := json.Marshal(args)
	env := "{}"
	if len(c.AgentEnv) > 0 {
		var kv []string
		for k, v := range c.AgentEnv {
			kv = append(kv, fmt.Sprintf("%s = %q", k, v))
		}
		env = "{ " + strings.Join(kv, ", ") + " }"
	}
	user := "" // a node run as root runs agents as root only when its manifest says so
	if os.Geteuid() == 0 {
		user = "user = \"root\"\n" // the load generator's own scripted agents
	}
	host := func(name string, pool int) string {
		return fmt.Sprintf("[hosts.%s]\ncommand = %q\nargs = %s\nenv = %s\npool = %d\nquestion_timeout = %q\nstop_grace = \"2s\"\n%s\n",
			name, command, argsJSON, env, pool, c.QuestionTimeout.String(), user)
	}
	// A node keeps every event in the history stream unless told not to: so does the
	// scenario, unless --keep-events=false.
	m += fmt.Sprintf("[audit]\nkeep_events = %t\n\n", c.KeepEvents)
	// warmup is the same agent on its own host: the probes run a session there first,
	// so what the runtime sets up once is not counted per session.
	return m + host(loadHost, c.Sessions) + host(warmupHost, 1) + loadSupervisors
}

// loadSupervisors are the scenario's supervisors and routes: a static supervisor that
// answers at once, and one nobody runs for the unrouted questions.
const loadSupervisors = `
[supervisors.fast]
strategy = "static"
concurrency = 1024
answers = { question = "unit", approval = "yes" }

[supervisors.nobody]
strategy = "external"

[[routes]]
match = "unrouted"
supervisor = "nobody"

[[routes]]
supervisor = "fast"
`

// inprocAgent is the load agent inside this process.
func inprocAgent(in io.Reader, out io.Writer) error { return sim.Run(in, out, sim.Options{}) }

// startNode starts a node for the scenario.
func (c *Config) startNode(ctx context.Context, log *slog.Logger) (*node.Node, error) {
	m, err := config.Parse("loadgen.toml", []byte(c.manifest()))
	if err != nil {
		return nil, fmt.Errorf("bench: the load manifest: %w", err)
	}
	return node.Start(ctx, c.agentOptions(m, log))
}

// agentOptions are the options of the node that runs the load agents.
func (c *Config) agentOptions(m *config.Manifest, log *slog.Logger) node.Options {
	opts := node.Options{Manifest: m, Name: "loadgen", Log: log, Ephemeral: true, NoTasks: true, MetricsAddr: "-", NoSupervisors: c.RemoteSupervisors}
	if c.Agent == AgentInProc {
		opts.InProc = map[string]node.InProc{loadHost: inprocAgent, warmupHost: inprocAgent}
	}
	return opts
}

// runAgentmux runs the scenario on a node: sessions submitted on the arrival schedule.
func runAgentmux(ctx context.Context, c *Config, log *slog.Logger, progress Progress) (*System, error) {
	n, err := c.startNode(ctx, log)
	if err != nil {
		return nil, err
	}
	return runOn(ctx, c, "agentmux", n, func() { stopNodes(n) }, progress)
}

// stopNodes stops nodes in order, each within a minute.
func stopNodes(nodes ...*node.Node) {
	for _, n := range nodes {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = n.Stop(stopCtx)
		cancel()
	}
}

// runOn runs the scenario's sessions on node n, whose supervisors may run elsewhere;
// stopAll stops n and whatever else the system runs, once.
func runOn(ctx context.Context, c *Config, name string, n *node.Node, stopAll func(), progress Progress) (*System, error) {
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopAll()
		}
	}
	defer stop()
	prompt := c.plan().Prompt()
	col := newCollector(name)
	results := make(chan *node.Result, c.Sessions)
	before := readUsage()
	t0 := time.Now()
	submitted := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	sample := time.NewTicker(50 * time.Millisecond)
	defer sample.Stop()
	active := n.Metrics.SessionsActive.WithLabelValues(loadHost)
	peak := 0
	for col.sessions < c.Sessions {
		due, now := c.nextArrival(t0, submitted, timer)
		if now {
			n.Submit(loadHost, "", prompt, results)
			submitted++
			continue
		}
		select {
		case <-due:
		case <-sample.C:
			peak = max(peak, int(gaugeValue(active)))
		case r := <-results:
			addResult(col, r)
			progress(name, col.sessions, c.Sessions)
		case <-ctx.Done():
			return nil, fmt.Errorf("bench: %s: %d of %d sessions ended before the timeout: %w", name, col.sessions, c.Sessions, ctx.Err())
		}
	}
	wall := time.Since(t0)
	if c.Agent == AgentProcess {
		// Stopping reaps the agent processes, so their CPU is counted as the baselines'
		// is. In-process agents' is counted already: the node's teardown is not, as the
		// baselines' is not.
		stop()
	}
	sys := col.system(wall, readUsage().since(before))
	sys.PeakConcurrent = peak
	return sys, nil
}

func addResult(col *collector, r *node.Result) {
	if !r.OK {
		col.fail(r.Error)
		return
	}
	var p struct {
		Load *sim.LoadReport `json:"load"`
	}
	if err := json.Unmarshal(r.Payload, &p); err != nil || p.Load == nil {
		col.fail(fmt.Sprintf("result without a load report: %.200s", r.Payload))
		return
	}
	p.Load.ReceivedNS = time.Now().UnixNano()
	col.add(p.Load)
}
