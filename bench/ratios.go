package bench

import "fmt"

// Ratio is one target of performance.md, measured.
type Ratio struct {
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Target string  `json:"target"` // empty: a figure reported, with no target
	Met    bool    `json:"met"`
}

// cells are the want and met columns of a table row.
func (r Ratio) cells() (want, met string) {
	switch {
	case r.Target == "":
		return "-", "-"
	case !r.Met:
		return r.Target, "NO"
	}
	return r.Target, "yes"
}

// The target of requests per CPU-second against B1a (issue 35).
const (
	perCPUFigure = "requests per CPU-second / B1a"
	perCPUTarget = "≥ 0.9"
)

// ratios compares agentmux with the baselines measured in the same run, and states
// every target the run can speak to.
func ratios(r *Report) []Ratio {
	am := r.system("agentmux")
	if am == nil {
		return nil
	}
	var out []Ratio
	add := func(figure string, value float64, target string, met bool) {
		out = append(out, Ratio{Figure: figure, Value: value, Target: target, Met: met})
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	// B1a writes what agentmux writes (issue 35): the targets are against it; B1,
	// which writes no audit, is reported beside it.
	if b1a := r.system("B1a"); b1a != nil && b1a.Questions.Count > 0 {
		p50 := ratio(float64(am.Questions.P50), float64(b1a.Questions.P50))
		p99 := ratio(float64(am.Questions.P99), float64(b1a.Questions.P99))
		add("question rtt p50 / B1a", p50, "≤ 1.2", p50 <= 1.2)
		add("question rtt p99 / B1a", p99, "≤ 1.5", p99 <= 1.5)
		qpc := ratio(am.QPSPerCore, b1a.QPSPerCore)
		add(perCPUFigure, qpc, perCPUTarget, meets(qpc, perCPUTarget))
	}
	if b1 := r.system("B1"); b1 != nil && b1.Questions.Count > 0 {
		add("question rtt p50 / B1", ratio(float64(am.Questions.P50), float64(b1.Questions.P50)), "", true)
		add("question rtt p99 / B1", ratio(float64(am.Questions.P99), float64(b1.Questions.P99)), "", true)
		add("requests per CPU-second / B1", ratio(am.QPSPerCore, b1.QPSPerCore), "", true)
	}
	if w := r.Wire; w != nil && am.Questions.Count > 0 {
		add("question rtt p50 / wire request p50", ratio(float64(am.Questions.P50), float64(w.Request.P50)), "", true)
		add("requests per CPU-second / wire requests per CPU-second", ratio(am.QPSPerCore, w.RequestPC), "", true)
	}
	if b1 := r.system("B1"); b1 != nil && b1.ProgressPS > 0 {
		prog := ratio(am.ProgressPS, b1.ProgressPS)
		add("progress lines/s / B1", prog, "≥ 0.9", prog >= 0.9)
	}
	if b2 := r.system("B2"); b2 != nil && b2.Questions.Count > 0 {
		v := ratio(float64(am.Questions.P50), float64(b2.Questions.P50))
		add("question rtt p50 / B2", v, "≤ 3", v <= 3)
	}
	if n := r.system("node"); n != nil && n.QPSPerHarness > 0 {
		v := ratio(am.QPSPerHarness, n.QPSPerHarness)
		add("requests per harness CPU-second / Node.js", v, "≥ 2", v >= 2)
	}
	if b1 := r.system("B1"); b1 != nil && r.Config.Agent == AgentProcess && b1.QPSPerHarness > 0 {
		v := ratio(am.QPSPerHarness, b1.QPSPerHarness)
		add("requests per harness CPU-second / B1", v, "≥ 0.8", v >= 0.8)
	}
	if r.Config.Agent == AgentInProc && r.Config.Progress > 0 && r.Config.ProgressRate == 0 && r.Config.Questions+r.Config.Approvals+r.Config.Unrouted == 0 {
		add("progress lines/s (inproc)", am.ProgressPS, "≥ 1,000,000", am.ProgressPS >= 1e6)
	}
	if f := r.system(fmt.Sprintf("agentmux-%dnodes", r.Config.Nodes)); f != nil && f.Questions.Count > 0 && am.Questions.Count > 0 {
		add("cross-node question rtt p50 / single node", ratio(float64(f.Questions.P50), float64(am.Questions.P50)), "", true)
		add("cross-node question rtt p99 / single node", ratio(float64(f.Questions.P99), float64(am.Questions.P99)), "", true)
	}
	if r3 := r.system("agentmux-r3"); r3 != nil && r3.Questions.Count > 0 && am.Questions.Count > 0 {
		add("three replicas: question rtt p50 / one replica", ratio(float64(r3.Questions.P50), float64(am.Questions.P50)), "", true)
		add("three replicas: question rtt p99 / one replica", ratio(float64(r3.Questions.P99), float64(am.Questions.P99)), "", true)
		add("three replicas: requests per CPU-second / one replica", ratio(r3.QPSPerCore, am.QPSPerCore), "", true)
	}
	// Against what users would pick instead (issue 35): ten times the answers per
	// CPU-second of all their processes, a tenth of their median.
	for _, name := range []string{"Temporal", "Restate"} {
		if p := r.system(name); p != nil && p.Questions.Count > 0 && am.Questions.Count > 0 {
			qpc := ratio(am.QPSPerCore, p.QPSPerCore)
			add("requests per CPU-second / "+name, qpc, "≥ 10", qpc >= 10)
			p50 := ratio(float64(am.Questions.P50), float64(p.Questions.P50))
			add("question rtt p50 / "+name, p50, "≤ 0.1", p50 <= 0.1)
			add("question rtt p99 / "+name, ratio(float64(am.Questions.P99), float64(p.Questions.P99)), "", true)
		}
	}
	if am.DefaultLate.Count > 0 {
		v := ms(am.DefaultLate.P99)
		add("default answer lateness p99 (ms)", v, "≤ 5", v <= 5)
	}
	if p := r.Probes; p != nil {
		add("runtime memory per live session (KiB)", p.BytesPerSession/1024, "≤ 64", p.BytesPerSession <= 64*1024)
		add("goroutines per live session", p.GoroutinesPerSession, "≤ 4", p.GoroutinesPerSession <= 4)
		add("NATS subscriptions per live session", p.SubscriptionsPerSession, "0", p.SubscriptionsPerSession < 0.01)
		add("idle CPU of the idle sessions (% of a core)", p.IdleCPUPercent, "≤ 1", p.IdleCPUPercent <= 1)
		add("session start rate / raw os/exec", p.StartRatio, "≥ 0.5", p.StartRatio >= 0.5)
	}
	return out
}
