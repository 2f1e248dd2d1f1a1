package metrics

import (
	"slices"
	"strings"

	"github.com/agentmux/agentmux/ask"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const namespace = "agentmux"

// waitBuckets are the classic buckets of request wait: 1 ms to 15 min.
var waitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}

// Set is the metric families of one node.
type Set struct {
	Registry *prometheus.Registry
	families []Family

	// The families, by the component that owns them (a file each).
	SessionMetrics
	AgentMetrics
	SupervisorMetrics
	BusMetrics
	ActorMetrics
	ManifestMetrics
	WorkspaceMetrics
	GatewayMetrics
}

// Family is one metric family a node exports: what dashboards, alerts and
// docs/metrics.md may name.
type Family struct {
	Name   string // agentmux_sessions_total
	Type   string // counter, gauge or histogram
	Help   string
	Labels []string
}

// Families lists every agentmux metric family of the set, by name.
func (s *Set) Families() []Family {
	out := slices.Clone(s.families)
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// New builds a Set in a fresh registry, with the Go, process and build-info collectors.
func New() *Set {
	r := prometheus.NewRegistry()
	f := &families{r: r}
	s := &Set{
		Registry:          r,
		SessionMetrics:    newSessionMetrics(f),
		AgentMetrics:      newAgentMetrics(f),
		SupervisorMetrics: newSupervisorMetrics(f),
		BusMetrics:        newBusMetrics(f),
		ActorMetrics:      newActorMetrics(f),
		ManifestMetrics:   newManifestMetrics(f),
		WorkspaceMetrics:  newWorkspaceMetrics(f),
		GatewayMetrics:    newGatewayMetrics(f),
	}
	s.ManifestReloadedOK.Set(1)
	f.note("build_info", "gauge", "Build information; always 1.", []string{"version", "revision", "goversion"})
	s.families = f.list
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b := ReadBuild()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info", Help: "Build information; always 1."}, []string{"version", "revision", "goversion"})
	build.WithLabelValues(b.Version, b.Revision, b.Go).Set(1)
	r.MustRegister(build)
	return s
}

// AskCounters are the counters of the node's Asker.
func (s *Set) AskCounters() ask.AskCounters {
	c := func(outcome string) ask.Counter { return s.AskRequests.WithLabelValues(outcome) }
	return ask.AskCounters{Answered: c("answered"), NoResponders: c("no_responders"), Timeout: c("timeout"),
		Error: c("error"), Reasked: c("reasked"), Duplicate: c("late")}
}

// DeciderKind is the bounded label of a decider: "rule:security" → "rule".
func DeciderKind(decider string) string {
	kind, _, _ := strings.Cut(decider, ":")
	switch kind {
	case "rule", "static", "llm", "command", "human", "tool", "default", "runtime", "replay", "session", "external":
		return kind
	}
	return "other"
}
