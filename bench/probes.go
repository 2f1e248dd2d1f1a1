package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agentmux/agentmux/node"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/sim"
)

// idleWindow is how long the idle sessions are watched for CPU.
const idleWindow = 5 * time.Second

// Probes are the per-session costs and the start rate.
type Probes struct {
	Sessions                int     `json:"sessions"`
	Agent                   string  `json:"agent"`
	BytesPerSession         float64 `json:"bytes_per_session"` // Go heap and stacks of the runtime
	GoroutinesPerSession    float64 `json:"goroutines_per_session"`
	SubscriptionsPerSession float64 `json:"nats_subscriptions_per_session"`
	IdleCPUPercent          float64 `json:"idle_cpu_percent_of_a_core"`
	StartSessions           int     `json:"start_sessions,omitempty"`
	StartPerSecond          float64 `json:"sessions_started_per_s,omitempty"`
	RawExecPerSecond        float64 `json:"raw_exec_per_s,omitempty"`
	StartRatio              float64 `json:"start_ratio,omitempty"`
}

func runProbes(ctx context.Context, c *Config, log *slog.Logger, progress Progress) (*Probes, error) {
	pc := *c
	pc.Sessions = c.ProbeSessions
	if len(c.AgentCommand) > 0 {
		pc.Agent = AgentProcess // the agents' own memory stays out of the runtime's
	}
	p := &Probes{Sessions: pc.Sessions, Agent: pc.Agent}
	if err := idleProbe(ctx, &pc, log, progress, p); err != nil {
		return nil, err
	}
	if pc.Agent == AgentProcess {
		if err := startProbe(ctx, &pc, log, progress, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// idleProbe holds N idle sessions live and measures what they cost the runtime.
func idleProbe(ctx context.Context, c *Config, log *slog.Logger, progress Progress, p *Probes) error {
	n, err := c.startNode(ctx, log)
	if err != nil {
		return err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = n.Stop(stop)
	}()
	warm, err := n.Run(ctx, warmupHost, "", (&sim.Load{Progress: 1, Questions: 1, Unrouted: 1, DefaultAfter: sim.Duration(time.Millisecond)}).Prompt())
	if err != nil || !warm.OK {
		return fmt.Errorf("bench: the warm-up session failed: %v %v", err, warm)
	}
	before := footprint(n)
	plan := &sim.Load{Progress: 1, Hold: sim.Duration(time.Hour)}
	results := make(chan *node.Result, c.Sessions)
	for range c.Sessions {
		n.Submit(loadHost, "", plan.Prompt(), results)
	}
	progressed := n.Metrics.Messages.WithLabelValues(loadHost, "progress")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for live := 0; live < c.Sessions; {
		select {
		case <-tick.C:
			live = int(counterValue(progressed))
			progress("idle sessions", live, c.Sessions)
		case r := <-results:
			return fmt.Errorf("bench: an idle session ended: %s", r.Error)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	after := settledFootprint(n)
	per := float64(c.Sessions)
	p.BytesPerSession = float64(after.bytes-before.bytes) / per
	p.GoroutinesPerSession = float64(after.goroutines-before.goroutines) / per
	p.SubscriptionsPerSession = float64(after.subscriptions-before.subscriptions) / per

	u0 := readUsage()
	select {
	case <-time.After(idleWindow):
	case <-ctx.Done():
		return ctx.Err()
	}
	p.IdleCPUPercent = 100 * readUsage().since(u0).cpu / idleWindow.Seconds()
	return nil
}

// settledFootprint is the least of a few footprints 100 ms apart: a goroutine that
// only passes (a timer's callback, a publish's flush) is not a session's.
func settledFootprint(n *node.Node) footprintFigures {
	f := footprint(n)
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		g := footprint(n)
		f = footprintFigures{bytes: min(f.bytes, g.bytes), goroutines: min(f.goroutines, g.goroutines), subscriptions: min(f.subscriptions, g.subscriptions)}
	}
	return f
}

type footprintFigures struct {
	bytes, goroutines, subscriptions int64
}

// footprint is the runtime's Go memory (heap and stacks, after a collection), its
// goroutines and its NATS subscriptions.
func footprint(n *node.Node) footprintFigures {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f := footprintFigures{bytes: int64(ms.HeapInuse + ms.StackInuse), goroutines: int64(runtime.NumGoroutine())}
	if srv := n.Bus.Server(); srv != nil {
		if v, err := srv.Varz(nil); err == nil {
			f.subscriptions = int64(v.Subscriptions)
		}
	}
	return f
}

func gaugeValue(g interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if g.Write(&m) != nil || m.Gauge == nil {
		return 0
	}
	return m.Gauge.GetValue()
}

func counterValue(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if c.Write(&m) != nil || m.Counter == nil {
		return 0
	}
	return m.Counter.GetValue()
}

// startProbe compares how fast the runtime starts sessions of process agents with
// starting the same agents with bare os/exec.
func startProbe(ctx context.Context, c *Config, log *slog.Logger, progress Progress, p *Probes) error {
	sc := *c
	sc.Sessions = min(c.Sessions, 200)
	p.StartSessions = sc.Sessions
	plan := (&sim.Load{Progress: 1}).Prompt()

	n, err := sc.startNode(ctx, log)
	if err != nil {
		return err
	}
	results := make(chan *node.Result, sc.Sessions)
	t0 := time.Now()
	for range sc.Sessions {
		n.Submit(loadHost, "", plan, results)
	}
	for i := range sc.Sessions {
		select {
		case r := <-results:
			if !r.OK {
				return fmt.Errorf("bench: start probe: %s", r.Error)
			}
			progress("start rate", i+1, sc.Sessions)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	runtimeTook := time.Since(t0)
	stop, cancel := context.WithTimeout(context.Background(), time.Minute)
	_ = n.Stop(stop)
	cancel()

	t0 = time.Now()
	errs := make(chan error, sc.Sessions)
	var wg sync.WaitGroup
	for range sc.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- rawSession(sc.AgentCommand, agentEnv(&sc), plan)
		}()
	}
	wg.Wait()
	rawTook := time.Since(t0)
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("bench: raw os/exec probe: %w", err)
		}
	}
	p.StartPerSecond = float64(sc.Sessions) / runtimeTook.Seconds()
	p.RawExecPerSecond = float64(sc.Sessions) / rawTook.Seconds()
	p.StartRatio = p.StartPerSecond / p.RawExecPerSecond
	return nil
}

// rawSession starts the agent with os/exec, gives it the prompt and waits for its result.
func rawSession(command, env []string, prompt string) error {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if _, err := in.Write(protocol.AppendPrompt(nil, prompt, "raw")); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"result"`) {
			break
		}
	}
	in.Close()
	return cmd.Wait()
}
