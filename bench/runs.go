package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"
)

// Runs is several runs of one scenario and the median of each target figure: the
// machines are noisy, so a ratio is read as the median of ratios each measured side by
// side in one run.
type Runs struct {
	Runs    []*Report `json:"runs"`
	Medians []Ratio   `json:"medians,omitempty"`
}

// WarmUpSessions is how many sessions of the scenario warm a system up before the
// first run.
const WarmUpSessions = 20

// RunN runs the scenario n times, after a short warm-up: the first system of an
// invocation would otherwise pay alone for a cold page cache (the agent binary, with
// process agents) and a cold start of everything it runs.
func RunN(ctx context.Context, c Config, n int, log *slog.Logger, progress Progress) (*Runs, error) {
	out := &Runs{}
	warm := c
	warm.Sessions, warm.Probes = min(c.Sessions, WarmUpSessions), false
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	_, err := runAgentmux(wctx, &warm, log, func(_ string, done, total int) { progress("warm-up", done, total) })
	cancel()
	if err != nil {
		return nil, fmt.Errorf("bench: warm-up: %w", err)
	}
	for i := range max(n, 1) {
		if err := Settle(ctx); err != nil {
			return nil, err
		}
		rep, err := Run(ctx, c, log, func(system string, done, total int) {
			progress(fmt.Sprintf("run %d/%d %s", i+1, n, system), done, total)
		})
		if err != nil {
			return nil, err
		}
		out.Runs = append(out.Runs, rep)
	}
	out.Medians = medians(out.Runs)
	return out, nil
}

func medians(runs []*Report) []Ratio {
	var out []Ratio
	for i, r := range runs[0].Ratios {
		values := []float64{}
		for _, run := range runs {
			if i < len(run.Ratios) && run.Ratios[i].Figure == r.Figure {
				values = append(values, run.Ratios[i].Value)
			}
		}
		m := median(values)
		out = append(out, Ratio{Figure: r.Figure, Value: m, Target: r.Target, Met: meets(m, r.Target)})
	}
	return out
}

// median is the median of values, which it sorts.
func median(values []float64) float64 {
	slices.Sort(values)
	m := values[len(values)/2]
	if len(values)%2 == 0 {
		m = (values[len(values)/2-1] + values[len(values)/2]) / 2
	}
	return m
}

// meets reads a target such as "≤ 1.3" or "≥ 1,000,000".
func meets(v float64, target string) bool {
	if target == "" {
		return true // a figure reported, with no target
	}
	var bound float64
	var op string
	clean := []rune{}
	for _, r := range target {
		if r != ',' {
			clean = append(clean, r)
		}
	}
	if _, err := fmt.Sscanf(string(clean), "%s %g", &op, &bound); err != nil {
		return v == 0 // "0"
	}
	switch op {
	case "≤":
		return v <= bound
	case "≥":
		return v >= bound
	}
	return false
}

// WriteMedians writes the median table of several runs.
func WriteMedians(w io.Writer, r *Runs) {
	if len(r.Runs) < 2 {
		return
	}
	fmt.Fprintf(w, "\nmedians of %d runs\n", len(r.Runs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tmedian\truns\twant\tmet")
	for i, m := range r.Medians {
		var each []string
		for _, run := range r.Runs {
			if i < len(run.Ratios) {
				each = append(each, fmt.Sprintf("%.3g", run.Ratios[i].Value))
			}
		}
		want, met := m.cells()
		fmt.Fprintf(tw, "%s\t%.3g\t%v\t%s\t%s\n", m.Figure, m.Value, each, want, met)
	}
	_ = tw.Flush()
}
