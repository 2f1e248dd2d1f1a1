package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the report as text tables.
func WriteTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "machine: %d cores %s/%s %s · %d sessions (%s agents), %d progress + %d questions + %d approvals + %d unrouted each, think %.0fms, NATS %s\n\n",
		r.Machine.Cores, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.GoVersion, r.Config.Sessions, r.Config.Agent, r.Config.Progress,
		r.Config.Questions, r.Config.Approvals, r.Config.Unrouted, r.Config.ThinkMS, r.Config.NATS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tok\tfailed\twall s\tprogress/s\trequests/s\tq p50 ms\tq p99 ms\tq p99.9 ms\tq max ms\tdefault late p99 ms\tsend lag max ms\tCPU s\treq/CPU-s\tharness CPU s\tpeak RSS MiB\tload1\tothers' cores\tsteal %\t")
	busy := 0
	for _, s := range r.Systems {
		name := s.Name
		if s.Busy {
			name += " (busy)"
			busy++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%.1f\t%.2f\t%.0f\t%.2f\t%.0f\t%.2f\t%.2f\t%.1f\t\n", name, s.Sessions-s.Failed, s.Failed, s.Wall,
			s.ProgressPS, s.RequestsPS, ms(s.Questions.P50), ms(s.Questions.P99), ms(s.Questions.P999), ms(s.Questions.Max),
			lateCell(s), ms(s.LagMax), s.CPU, s.QPSPerCore, s.HarnessCPU, float64(s.PeakRSS+s.ServersRSS)/(1<<20), s.Load1, s.OthersCPU, s.StealPct)
	}
	_ = tw.Flush()
	if busy > 0 {
		fmt.Fprintf(w, "\n(busy): in %d runs other processes kept over a quarter of a core busy, or the hypervisor stole over 2%% of the CPU (macOS: the 1-minute load began above half the cores): their figures measure the neighbours too\n",
			busy)
	}
	if peers := r.peers(); peers > 0 {
		fmt.Fprintf(w, "\npeers: CPU counts their servers' and services' processes with the harness's; peak RSS sums theirs with its (on macOS, theirs as the run ended)\n")
	}
	if x := r.Wire; x != nil {
		fmt.Fprintf(w, "\nwire (%d round trips, one client, one after another): NATS request p50 %.3f ms, p99 %.3f ms, %.0f per CPU-second; JetStream publish (acked) p50 %.3f ms, p99 %.3f ms, %.0f per CPU-second\n",
			x.Rounds, ms(x.Request.P50), ms(x.Request.P99), x.RequestPC, ms(x.Publish.P50), ms(x.Publish.P99), x.PublishPC)
	}
	if p := r.Probes; p != nil {
		fmt.Fprintf(w, "\nprobes (%d idle %s sessions): %.1f KiB and %.2f goroutines and %.2f NATS subscriptions per session; idle CPU %.2f%% of a core",
			p.Sessions, p.Agent, p.BytesPerSession/1024, p.GoroutinesPerSession, p.SubscriptionsPerSession, p.IdleCPUPercent)
		if p.StartSessions > 0 {
			fmt.Fprintf(w, "; start %.0f sessions/s vs raw os/exec %.0f/s", p.StartPerSecond, p.RawExecPerSecond)
		}
		fmt.Fprintln(w)
	}
	if am := r.system("agentmux"); am != nil && am.PeakConcurrent > 0 {
		fmt.Fprintf(w, "\nagentmux ran up to %d sessions at once (%d %s agents in all, %d failed)\n", am.PeakConcurrent, am.Sessions, r.Config.Agent, am.Failed)
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "target\tmeasured\twant\tmet")
		for _, x := range r.Ratios {
			want, met := x.cells()
			fmt.Fprintf(tw, "%s\t%.3g\t%s\t%s\n", x.Figure, x.Value, want, met)
		}
		_ = tw.Flush()
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func lateCell(s *System) string {
	if s.DefaultLate.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", ms(s.DefaultLate.P99))
}
