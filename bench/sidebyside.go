package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
)

// Systems RunOne runs.
const (
	SystemAgentmux = "agentmux"
	SystemB1a      = "B1a"
)

// RunOne runs the scenario on one system alone: agentmux on a node of its own, or B1a
// on a NATS server of its own, set up as the baselines' is. ready is called once the
// system is up, before the first session; it may wait, so that `loadgen side-by-side`
// starts the two systems' sessions together, each system in a process of its own.
func RunOne(ctx context.Context, c Config, system string, log *slog.Logger, ready func() error) (*System, error) {
	ctx, cancel, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	quiet := func(string, int, int) {}
	switch system {
	case SystemAgentmux:
		n, err := c.startNode(ctx, log)
		if err != nil {
			return nil, err
		}
		if err := ready(); err != nil {
			stopNodes(n)
			return nil, err
		}
		return runOn(ctx, &c, SystemAgentmux, n, func() { stopNodes(n) }, quiet)
	case SystemB1a:
		b, _, closeAll, err := openBaselineBus(ctx, &c, log)
		if err != nil {
			return nil, err
		}
		defer closeAll()
		if err := ready(); err != nil {
			return nil, err
		}
		return runB1a(ctx, &c, b, log, quiet)
	}
	return nil, fmt.Errorf("bench: no system %q to run alone; want %s or %s", system, SystemAgentmux, SystemB1a)
}

// Pair is agentmux and B1a run at the same time on the same scenario.
type Pair struct {
	Agentmux *System `json:"agentmux"`
	B1a      *System `json:"b1a"`
}

// PerCPU is agentmux's requests per CPU-second over B1a's.
func (p Pair) PerCPU() float64 {
	if p.B1a.QPSPerCore == 0 {
		return 0
	}
	return p.Agentmux.QPSPerCore / p.B1a.QPSPerCore
}

// Pairs are the runs of `loadgen side-by-side`. Run one after the other, one system's
// CPU for the same work swings by a fifth from run to run on a shared machine; run at
// the same time, both are measured through the same swings, and their ratio holds to
// a few per cent. Their latencies are not compared: each system's is the other's load.
type Pairs struct {
	Pairs  []Pair  `json:"pairs"`
	Median Ratio   `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// NewPairs sums pairs up.
func NewPairs(pairs []Pair) *Pairs {
	values := make([]float64, len(pairs))
	for i, p := range pairs {
		values[i] = p.PerCPU()
	}
	m := median(values)
	return &Pairs{Pairs: pairs, Median: Ratio{Figure: perCPUFigure, Value: m, Target: perCPUTarget, Met: meets(m, perCPUTarget)},
		Min: values[0], Max: values[len(values)-1]}
}

// WritePairs writes the table of side-by-side runs.
func WritePairs(w io.Writer, p *Pairs) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tagentmux CPU s\tB1a CPU s\tagentmux req/CPU-s\tB1a req/CPU-s\tratio\tload1\tsteal %\t")
	for i, pair := range p.Pairs {
		fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.0f\t%.0f\t%.3f\t%.2f\t%.1f\t\n", i+1, pair.Agentmux.CPU, pair.B1a.CPU,
			pair.Agentmux.QPSPerCore, pair.B1a.QPSPerCore, pair.PerCPU(), pair.Agentmux.Load1, max(pair.Agentmux.StealPct, pair.B1a.StealPct))
	}
	_ = tw.Flush()
	want, met := p.Median.cells()
	fmt.Fprintf(w, "\n%s, agentmux and B1a run at the same time: median %.3f of %d runs (%.3f to %.3f); want %s: %s\n",
		p.Median.Figure, p.Median.Value, len(p.Pairs), p.Min, p.Max, want, met)
}
