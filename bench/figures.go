package bench

import (
	"runtime"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/agentmux/agentmux/sim"
)

// Latency is a distribution summarized for the report, in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   int64   `json:"p50_us"`
	P90   int64   `json:"p90_us"`
	P99   int64   `json:"p99_us"`
	P999  int64   `json:"p999_us"`
	Max   int64   `json:"max_us"`
	Mean  float64 `json:"mean_us"`
	hist  *hdrhistogram.Histogram
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

func summarize(h *hdrhistogram.Histogram) Latency {
	return Latency{Count: h.TotalCount(), P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90), P99: h.ValueAtQuantile(99),
		P999: h.ValueAtQuantile(99.9), Max: h.Max(), Mean: h.Mean(), hist: h}
}

// System is what one system under test did with the scenario.
type System struct {
	Name        string         `json:"name"`
	Sessions    int            `json:"sessions"`
	Failed      int            `json:"failed"`
	Errors      []string       `json:"errors,omitempty"` // the first few
	Wall        float64        `json:"wall_s"`
	Progress    int64          `json:"progress_lines"`
	ProgressPS  float64        `json:"progress_lines_per_s"`
	Requests    int64          `json:"requests"`
	RequestsPS  float64        `json:"requests_per_s"`
	Questions   Latency        `json:"question_rtt"`
	Approvals   Latency        `json:"approval_rtt"`
	DefaultLate Latency        `json:"default_late"`
	SendLag     Latency        `json:"send_lag"` // the agents' own scheduling lag
	LagMax      int64          `json:"send_lag_max_us"`
	Outcomes    map[string]int `json:"outcomes"`
	Missing     int            `json:"missing"`
	CPU         float64        `json:"cpu_s"`          // this process and its children
	PeakRSS     int64          `json:"peak_rss_bytes"` // this process (children apart)
	ChildRSS    int64          `json:"child_peak_rss_bytes,omitempty"`
	QPSPerCore  float64        `json:"requests_per_cpu_s"`
	// HarnessCPU is the CPU of the system alone, without its agent processes (process
	// agents only; inproc agents share the process).
	HarnessCPU     float64 `json:"harness_cpu_s,omitempty"`
	QPSPerHarness  float64 `json:"requests_per_harness_cpu_s,omitempty"`
	PeakConcurrent int     `json:"peak_concurrent_sessions,omitempty"` // agentmux: sampled every 50 ms
	// Durable is how many of its audit records the stream holds once its run is over
	// (B1a): one for each session's start and end, and one for each request.
	Durable int64 `json:"durable_records,omitempty"`
	// ServersCPU is the CPU of a peer's own processes (its servers, its SDK's
	// services), counted in CPU; ServersRSS their peak memory, summed (on macOS, their
	// memory as the run ended).
	ServersCPU float64 `json:"servers_cpu_s,omitempty"`
	ServersRSS int64   `json:"servers_peak_rss_bytes,omitempty"`
	// AuditReplicas is how many copies of the audit its cluster kept (clustered runs).
	AuditReplicas int `json:"audit_replicas,omitempty"`
	// Load1 is the machine's 1-minute load average as the run began; OthersCPU the
	// cores other processes kept busy during it, on average (Linux); StealPct the share
	// of the machine's CPU time its hypervisor stole. Busy marks a run on a machine too
	// busy for its figures to be trusted (busyMachine).
	Load1     float64 `json:"load1"`
	OthersCPU float64 `json:"others_cpu_cores"`
	StealPct  float64 `json:"steal_pct"`
	Busy      bool    `json:"busy,omitempty"`
}

// busyMachine says whether a run shared the machine: other processes kept more than a
// quarter of a core busy on average, or the hypervisor stole more than 2% of its CPU
// time. Where the machine's CPU time is not read (macOS), a run that began with the
// 1-minute load above half the cores is busy.
func busyMachine(load1, others, steal float64, cores int, cpuKnown bool) bool {
	if !cpuKnown {
		return load1 > float64(cores)/2
	}
	return others > 0.25 || steal > 2
}

// neighbours is what the rest of the machine did during a measurement u of wall: the
// cores other processes kept busy, the share of CPU the hypervisor stole, and whether
// that makes the machine too busy to trust the figures (busyMachine).
func (u usage) neighbours(wall time.Duration) (others, stealPct float64, busy bool) {
	if u.total > 0 {
		stealPct = 100 * u.steal / u.total
		if wall > 0 {
			others = max(0, (u.busy-u.steal-u.cpu)/wall.Seconds())
		}
	}
	return others, stealPct, busyMachine(u.load1, others, stealPct, runtime.NumCPU(), u.total > 0)
}

// collector gathers the load reports of one system's sessions.
type collector struct {
	name                       string
	q, a, late, lag            *hdrhistogram.Histogram
	progress, requests, lagMax int64
	outcomes                   map[string]int
	firstStart, lastProgress   int64 // unix ns: the progress phase, across sessions
	missing, sessions, failed  int
	errors                     []string
}

func newCollector(name string) *collector {
	return &collector{name: name, q: newHist(), a: newHist(), late: newHist(), lag: newHist(), outcomes: map[string]int{}}
}

func (c *collector) add(r *sim.LoadReport) {
	c.sessions++
	c.progress += int64(r.Progress)
	if r.Progress > 0 {
		if c.firstStart == 0 || r.StartNS < c.firstStart {
			c.firstStart = r.StartNS
		}
		// The result follows the last progress line on the same pipe: when it is read,
		// every progress line has been.
		end := r.ReceivedNS
		if end == 0 {
			end = r.ProgressEndNS
		}
		c.lastProgress = max(c.lastProgress, end)
	}
	for _, v := range r.QuestionsUS {
		_ = c.q.RecordValue(max(v, 1))
	}
	for _, v := range r.ApprovalsUS {
		_ = c.a.RecordValue(max(v, 1))
	}
	for _, v := range r.LateUS {
		_ = c.late.RecordValue(max(v, 1))
	}
	for _, v := range r.LagUS {
		_ = c.lag.RecordValue(max(v, 1))
	}
	c.lagMax = max(c.lagMax, r.LagMaxUS)
	c.requests += int64(len(r.QuestionsUS) + len(r.ApprovalsUS) + len(r.LateUS))
	for k, v := range r.Outcomes {
		c.outcomes[k] += v
	}
	c.missing += r.Missing
}

func (c *collector) fail(err string) {
	c.sessions++
	c.failed++
	if len(c.errors) < 5 {
		c.errors = append(c.errors, err)
	}
}

func (c *collector) system(wall time.Duration, u usage) *System {
	s := &System{Name: c.name, Sessions: c.sessions, Failed: c.failed, Errors: c.errors, Wall: wall.Seconds(),
		Progress: c.progress, Requests: c.requests, Questions: summarize(c.q), Approvals: summarize(c.a),
		DefaultLate: summarize(c.late), SendLag: summarize(c.lag), LagMax: c.lagMax, Outcomes: c.outcomes,
		Missing: c.missing, CPU: u.cpu, PeakRSS: u.rss, ChildRSS: u.childRSS, Load1: u.load1}
	s.OthersCPU, s.StealPct, s.Busy = u.neighbours(wall)
	if wall > 0 {
		s.RequestsPS = float64(c.requests) / wall.Seconds()
	}
	// Progress throughput from the first session's start to the last progress line read.
	if phase := time.Duration(c.lastProgress - c.firstStart); phase > 0 {
		s.ProgressPS = float64(c.progress) / phase.Seconds()
	}
	if u.cpu > 0 {
		s.QPSPerCore = float64(c.requests) / u.cpu
	}
	if u.self > 0 {
		s.HarnessCPU = u.self
		s.QPSPerHarness = float64(c.requests) / u.self
	}
	return s
}
