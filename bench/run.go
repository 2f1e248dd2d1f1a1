package bench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/store"
)

// Report is everything one invocation measured.
type Report struct {
	Machine Machine    `json:"machine"`
	Config  ConfigEcho `json:"config"`
	Systems []*System  `json:"systems"`
	Ratios  []Ratio    `json:"ratios,omitempty"`
	Probes  *Probes    `json:"probes,omitempty"`
	Wire    *Wire      `json:"wire,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
}

// Machine is where the figures were measured.
type Machine struct {
	Cores     int    `json:"cores"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go"`
}

// ConfigEcho is the scenario as run.
type ConfigEcho struct {
	Sessions        int     `json:"sessions"`
	Rate            float64 `json:"arrival_rate"`
	Progress        int     `json:"progress_per_session"`
	ProgressRate    float64 `json:"progress_rate"`
	Questions       int     `json:"questions_per_session"`
	Approvals       int     `json:"approvals_per_session"`
	Checkpoints     int     `json:"checkpoints_per_session,omitempty"`
	Unrouted        int     `json:"unrouted_per_session"`
	ThinkMS         float64 `json:"think_ms"`
	QuestionTimeout float64 `json:"question_timeout_ms"`
	Agent           string  `json:"agent"`
	NATS            string  `json:"nats"`
	Nodes           int     `json:"nodes,omitempty"`
	Replicated      bool    `json:"replicated,omitempty"`
}

// Run runs the scenario on agentmux and, when asked, on the baselines and probes, one
// after the other in this process, so their figures compare.
func Run(ctx context.Context, c Config, log *slog.Logger, progress Progress) (*Report, error) {
	ctx, cancel, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	rep := &Report{
		Machine: Machine{Cores: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()},
		Config: ConfigEcho{Sessions: c.Sessions, Rate: c.Rate, Progress: c.Progress, ProgressRate: c.ProgressRate, Questions: c.Questions,
			Approvals: c.Approvals, Checkpoints: c.Checkpoints, Unrouted: c.Unrouted, ThinkMS: ms(c.Think.Microseconds()), QuestionTimeout: ms(c.QuestionTimeout.Microseconds()),
			Agent: c.Agent, NATS: natsName(c.NATSURL), Nodes: c.Nodes, Replicated: c.Replicated},
	}
	sys, err := runAgentmux(ctx, &c, log, progress)
	if err != nil {
		return nil, err
	}
	rep.Systems = append(rep.Systems, sys)
	if c.Nodes > 1 {
		if err := Settle(ctx); err != nil {
			return nil, err
		}
		fleet, err := runFleet(ctx, &c, log, progress)
		if err != nil {
			return nil, err
		}
		rep.Systems = append(rep.Systems, fleet)
	}
	if c.Replicated {
		if err := Settle(ctx); err != nil {
			return nil, err
		}
		r3, err := runReplicated(ctx, &c, log, progress)
		if err != nil {
			return nil, err
		}
		rep.Systems = append(rep.Systems, r3)
	}
	if c.Baselines {
		if err := Settle(ctx); err != nil {
			return nil, err
		}
		if err := runBaselines(ctx, &c, log, progress, rep); err != nil {
			return nil, err
		}
	}
	if len(c.Peers) > 0 {
		if err := runPeers(ctx, &c, progress, rep); err != nil {
			return nil, err
		}
	}
	if c.Probes {
		p, err := runProbes(ctx, &c, log, progress)
		if err != nil {
			return nil, err
		}
		rep.Probes = p
	}
	rep.Ratios = ratios(rep)
	return rep, nil
}

func runBaselines(ctx context.Context, c *Config, log *slog.Logger, progress Progress, rep *Report) error {
	b, id, closeAll, err := openBaselineBus(ctx, c, log)
	if err != nil {
		return err
	}
	defer closeAll()
	b0, err := (&harness{c: c}).run(ctx, "B0", progress)
	if err == nil {
		err = Settle(ctx)
	}
	if err != nil {
		return err
	}
	b1, err := (&harness{c: c, nc: b.Conn}).run(ctx, "B1", progress)
	if err == nil {
		err = Settle(ctx)
	}
	if err != nil {
		return err
	}
	b1a, err := runB1a(ctx, c, b, log, progress)
	if err != nil {
		return err
	}
	b2, err := runB2(ctx, c, b.Conn, progress)
	if err == nil {
		err = Settle(ctx)
	}
	if err != nil {
		return err
	}
	rep.Systems = append(rep.Systems, b0, b1, b1a, b2)
	if rep.Wire, err = measureWire(ctx, b.Conn, b.JS); err != nil {
		return err
	}
	if c.Agent != AgentProcess {
		rep.Notes = append(rep.Notes, "node: the Node.js harness spawns processes; run with --agent process to compare with it")
		return nil
	}
	n, err := runNode(ctx, c, b, id, progress)
	if err != nil {
		return err
	}
	rep.Systems = append(rep.Systems, n)
	return nil
}

// openBaselineBus opens the baselines' NATS (an embedded server of their own, or
// c.NATSURL) with the audit's stream declared and B1's responder answering on a
// connection of its own; closeAll closes them.
func openBaselineBus(ctx context.Context, c *Config, log *slog.Logger) (b *bus.Bus, id bus.Identity, closeAll func(), err error) {
	cfg := bus.Config{URL: c.NATSURL, Listen: "127.0.0.1:0", Name: "loadgen-baselines"}
	if c.NATSURL == "" {
		u := newBusUser()
		cfg.Users, cfg.Identity = []bus.User{u.User}, u.identity()
	} else if cfg.Identity, err = externalIdentity(); err != nil {
		return nil, id, nil, err
	}
	if b, err = bus.Open(cfg, log); err != nil {
		return nil, id, nil, err
	}
	if _, err := store.Declare(ctx, b.JS, 0, store.Keep{}, log); err != nil {
		b.Close()
		return nil, id, nil, err
	}
	peer, err := bus.Connect(bus.Client{URL: b.ClientURL(), Name: "loadgen-responder", Identity: cfg.Identity})
	if err != nil {
		b.Close()
		return nil, id, nil, err
	}
	if _, err := responder(peer, b1Subject); err != nil {
		peer.Close()
		b.Close()
		return nil, id, nil, err
	}
	return b, cfg.Identity, func() { peer.Close(); b.Close() }, nil
}

func natsName(url string) string {
	if url == "" {
		return "embedded"
	}
	return url
}

func ms(us int64) float64 { return float64(us) / 1000 }

// system finds a system of the report by name.
func (r *Report) system(name string) *System {
	for _, s := range r.Systems {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// peers counts the peers' systems of the report.
func (r *Report) peers() int {
	n := 0
	for _, s := range r.Systems {
		if s.ServersCPU > 0 || s.ServersRSS > 0 {
			n++
		}
	}
	return n
}

// HasLatencies reports whether any system answered questions (there is a plot).
func (r *Report) HasLatencies() bool {
	for _, s := range r.Systems {
		if s.Questions.Count > 0 {
			return true
		}
	}
	return false
}

// Err is an error when any system lost sessions or requests.
func (r *Report) Err() error {
	for _, s := range r.Systems {
		if s.Failed > 0 || s.Missing > 0 {
			return fmt.Errorf("bench: %s: %d sessions failed, %d requests unanswered (first errors: %v)", s.Name, s.Failed, s.Missing, s.Errors)
		}
	}
	return nil
}

// settleTime is how long Settle waits.
const settleTime = time.Second

// Settle lets the machine quiet down between systems: exited agents reaped, their
// memory returned, the collector run.
func Settle(ctx context.Context) error {
	runtime.GC()
	debug.FreeOSMemory()
	select {
	case <-time.After(settleTime):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
