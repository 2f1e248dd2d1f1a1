package metrics

import (
	"runtime/debug"
	"slices"
	"strings"
	"time"

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

	SessionsActive  *prometheus.GaugeVec   // host
	Sessions        *prometheus.CounterVec // host, outcome (ok, error)
	SessionDuration *prometheus.HistogramVec
	Agents          *prometheus.GaugeVec   // host, state (idle, busy)
	AgentStarts     *prometheus.CounterVec // host
	AgentExits      *prometheus.CounterVec // host, reason
	Messages        *prometheus.CounterVec // host, type
	FrameErrors     *prometheus.CounterVec // host, reason
	StderrLines     *prometheus.CounterVec // host, disposition (published, dropped)
	Requests        *prometheus.CounterVec // host, type, outcome
	RequestWait     *prometheus.HistogramVec
	LateAnswers     *prometheus.CounterVec // host
	StdinWrites     *prometheus.CounterVec // host, outcome (ok, timeout, error)
	AskRequests     *prometheus.CounterVec // outcome (answered, no_responders, timeout, error, reasked, late)
	Decisions       *prometheus.CounterVec // supervisor, outcome
	DecisionTime    *prometheus.HistogramVec
	Tasks           *prometheus.CounterVec // host, outcome (ok, error, invalid)
	PublishErrors   *prometheus.CounterVec // kind (event, audit)
	AuditPublishes  prometheus.Counter
	AuditTruncated  prometheus.Counter
	NATSReconnects  prometheus.Counter
	NATSDisconnects prometheus.Counter
	NATSAsyncErrors prometheus.Counter
	LLMRequests     *prometheus.CounterVec // supervisor, outcome (ok, error, timeout, unparseable)
	LLMSeconds      *prometheus.HistogramVec
	LLMTokens       *prometheus.CounterVec   // supervisor, direction (input, output)
	HumanPending    *prometheus.CounterVec   // supervisor
	FrameBytes      *prometheus.HistogramVec // host
	Answers         *prometheus.CounterVec   // host, decider (kind: rule, static, llm, command, human, tool, default, runtime, replay, session, external, other)
	StdinSeconds    *prometheus.HistogramVec // host
	SlowConsumers   prometheus.Counter
	DeadLetters     prometheus.Counter
	ActorFailures   *prometheus.CounterVec // directive (restart, stop, resume, escalate)
	Unhandled       *prometheus.CounterVec // host
	ResultChecks    *prometheus.CounterVec // host, outcome (fit, reprompted, failed)
	Pipelines       *prometheus.CounterVec // pipeline, outcome (ok, error)
	PipelineStages  *prometheus.CounterVec // pipeline, stage, outcome (ok, error, resumed)
	Notifications   *prometheus.CounterVec // notify, event, outcome (sent, retried, failed, dropped, invalid)
	TaskIntake      *prometheus.GaugeVec   // host: 1 while this node takes the host's queued tasks
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
	var families []Family
	note := func(name, typ, help string, labels []string) {
		families = append(families, Family{Name: namespace + "_" + name, Type: typ, Help: help, Labels: labels})
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		r.MustRegister(c)
		note(name, "counter", help, labels)
		return c
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
		r.MustRegister(g)
		note(name, "gauge", help, labels)
		return g
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: name, Help: help, Buckets: buckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, labels)
		r.MustRegister(h)
		note(name, "histogram", help, labels)
		return h
	}
	// classic is a histogram with classic buckets only, for the per-line paths.
	classic := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
		r.MustRegister(h)
		note(name, "histogram", help, labels)
		return h
	}
	plain := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
		r.MustRegister(c)
		note(name, "counter", help, nil)
		return c
	}
	s := &Set{
		Registry:        r,
		SessionsActive:  gauge("sessions_active", "Sessions running now.", "host"),
		Sessions:        counter("sessions_total", "Sessions ended, by outcome (ok, error).", "host", "outcome"),
		SessionDuration: histogram("session_duration_seconds", "Wall time of ended sessions.", prometheus.ExponentialBuckets(0.01, 4, 10), "host"),
		Agents:          gauge("agents", "Agent processes alive, by state: starting (until ready), idle, busy, stopping (until its output is read to the end).", "host", "state"),
		AgentStarts:     counter("agent_starts_total", "Agent processes started.", "host"),
		AgentExits:      counter("agent_exits_total", "Agent processes exited, by reason (exit_ok, exit_error, signal, killed, start_failed).", "host", "reason"),
		Messages:        counter("messages_total", "Agent messages read, by canonical type.", "host", "type"),
		FrameErrors:     counter("frame_errors_total", "Lines dropped, by reason (too_long, invalid_json, invalid_utf8, duplicate_key, bad_field, dialect).", "host", "reason"),
		StderrLines:     counter("agent_stderr_lines_total", "Agent stderr lines, published or dropped by the rate limit.", "host", "disposition"),
		Requests:        counter("requests_total", "Requests ended, by type and outcome (answered, timed_out, cancelled, invalid).", "host", "type", "outcome"),
		RequestWait:     histogram("request_wait_seconds", "Time from a request being read to its answer being written.", waitBuckets, "type"),
		LateAnswers:     counter("late_answers_total", "Supervisor answers that arrived after their request had ended.", "host"),
		StdinWrites:     counter("stdin_writes_total", "Writes to agents' stdin, by outcome (ok, timeout, error).", "host", "outcome"),
		AskRequests:     counter("ask_requests_total", "NATS requests to supervisors, by outcome (answered, no_responders, timeout, error; reasked: a member went silent or let go, or the connection came back; late: an answer after the first or after the request was settled).", "outcome"),
		Decisions:       counter("supervisor_decisions_total", "Decisions made by local supervisors, by outcome (decided, default, error, expired).", "supervisor", "outcome"),
		DecisionTime:    histogram("supervisor_decision_seconds", "Time local supervisors took to decide.", waitBuckets, "supervisor"),
		Tasks:           counter("tasks_total", "Tasks taken from the work queue, by outcome (ok, error, invalid).", "host", "outcome"),
		PublishErrors:   counter("publish_errors_total", "NATS publishes that failed, by kind (event, audit).", "kind"),
		AuditPublishes:  plain("audit_publishes_total", "Audit records published."),
		AuditTruncated:  plain("audit_truncated_total", "Audit records over the server's payload limit, stored with their longest fields cut."),
		NATSReconnects:  plain("nats_reconnects_total", "Reconnections to NATS."),
		NATSDisconnects: plain("nats_disconnects_total", "Disconnections from NATS."),
		NATSAsyncErrors: plain("nats_async_errors_total", "Asynchronous NATS errors such as slow consumers."),
		LLMRequests:     counter("llm_requests_total", "Model calls by llm supervisors, by outcome (ok, error, timeout, unparseable).", "supervisor", "outcome"),
		LLMSeconds:      histogram("llm_request_seconds", "Time model calls took.", waitBuckets, "supervisor"),
		LLMTokens:       counter("llm_tokens_total", "Tokens of model calls, by direction (input, output).", "supervisor", "direction"),
		HumanPending:    counter("human_requests_total", "Requests handed to a person (human supervisors and escalations).", "supervisor"),
		FrameBytes:      classic("frame_bytes", "Size of the lines agents write, in bytes.", prometheus.ExponentialBuckets(64, 4, 10), "host"),
		Answers:         counter("answers_total", "Answers written to agents, by the kind of decider (rule, static, llm, command, human, tool, default, runtime, replay, session, external, other).", "host", "decider"),
		StdinSeconds:    classic("stdin_write_seconds", "Time each write to an agent's stdin took.", []float64{.00001, .0001, .001, .01, .1, 1, 10}, "host"),
		SlowConsumers:   plain("nats_slow_consumers_total", "NATS subscriptions of this node that fell behind and lost messages."),
		DeadLetters:     plain("actor_dead_letters_total", "Actor messages sent to actors that had already stopped."),
		ActorFailures:   counter("actor_failures_total", "Actor failures handled by supervision, by directive.", "directive"),
		Unhandled:       counter("unhandled_messages_total", "Agent messages of a type no protocol defines or the host did not declare in messages: published as listen:unhandled.", "host"),
		ResultChecks:    counter("result_checks_total", "Typed results checked against their schema, by outcome (fit; reprompted: a new prompt said what was wrong; failed: the session ended in error).", "host", "outcome"),
		Pipelines:       counter("pipelines_total", "Pipeline runs ended, by outcome (ok, error).", "pipeline", "outcome"),
		TaskIntake:      gauge("task_intake", "1 while this node takes the host's tasks from the work queue; 0 once it drains or stops.", "host"),
		Notifications:   counter("notifications_total", "Webhook notifications, by outcome (sent; retried: a try failed and another follows; failed: given up at the deadline or refused; dropped: too many waiting; invalid).", "notify", "event", "outcome"),
		PipelineStages:  counter("pipeline_stages_total", "Pipeline stages ended, by outcome (ok, error; resumed: taken up again after the node running it was gone).", "pipeline", "stage", "outcome"),
	}
	note("build_info", "gauge", "Build information; always 1.", []string{"version"})
	s.families = families
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	version := Version()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info", Help: "Build information; always 1."}, []string{"version"})
	build.WithLabelValues(version).Set(1)
	r.MustRegister(build)
	return s
}

// Version is this binary's module version, or "(devel)" for a build from a work tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
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
