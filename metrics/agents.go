package metrics

import "github.com/prometheus/client_golang/prometheus"

// AgentMetrics are the agent actors' metric families: processes, the lines they write, their requests and the answers written to them.
type AgentMetrics struct {
	Agents       *prometheus.GaugeVec     // host, state (idle, busy)
	AgentStarts  *prometheus.CounterVec   // host
	AgentExits   *prometheus.CounterVec   // host, reason
	Messages     *prometheus.CounterVec   // host, type
	FrameErrors  *prometheus.CounterVec   // host, reason
	FrameBytes   *prometheus.HistogramVec // host
	StderrLines  *prometheus.CounterVec   // host, disposition (published, dropped)
	Unhandled    *prometheus.CounterVec   // host
	Requests     *prometheus.CounterVec   // host, type, outcome
	RequestWait  *prometheus.HistogramVec
	LateAnswers  *prometheus.CounterVec   // host
	Answers      *prometheus.CounterVec   // host, decider (kind: rule, static, llm, command, human, tool, default, runtime, replay, session, external, other)
	StdinWrites  *prometheus.CounterVec   // host, outcome (ok, timeout, error)
	StdinSeconds *prometheus.HistogramVec // host
	ResultChecks *prometheus.CounterVec   // host, outcome (fit, reprompted, failed)
}

func newAgentMetrics(f *families) AgentMetrics {
	return AgentMetrics{
		Agents:       f.gauge("agents", "Agent processes alive, by state: starting (until ready), idle, busy, stopping (until its output is read to the end).", "host", "state"),
		AgentStarts:  f.counter("agent_starts_total", "Agent processes started.", "host"),
		AgentExits:   f.counter("agent_exits_total", "Agent processes exited, by reason (exit_ok, exit_error, signal, killed, start_failed).", "host", "reason"),
		Messages:     f.counter("messages_total", "Agent messages read, by canonical type.", "host", "type"),
		FrameErrors:  f.counter("frame_errors_total", "Lines dropped, by reason (too_long, invalid_json, invalid_utf8, duplicate_key, bad_field, dialect).", "host", "reason"),
		FrameBytes:   f.classic("frame_bytes", "Size of the lines agents write, in bytes.", prometheus.ExponentialBuckets(64, 4, 10), "host"),
		StderrLines:  f.counter("agent_stderr_lines_total", "Agent stderr lines, published or dropped by the rate limit.", "host", "disposition"),
		Unhandled:    f.counter("unhandled_messages_total", "Agent messages of a type no protocol defines or the host did not declare in messages: published as listen:unhandled.", "host"),
		Requests:     f.counter("requests_total", "Requests ended, by type and outcome (answered, defaulted, timed_out, cancelled, invalid).", "host", "type", "outcome"),
		RequestWait:  f.histogram("request_wait_seconds", "Time from a request being read to its answer being written.", waitBuckets, "type"),
		LateAnswers:  f.counter("late_answers_total", "Supervisor answers that arrived after their request had ended.", "host"),
		Answers:      f.counter("answers_total", "Answers written to agents, by the kind of decider (rule, static, llm, command, human, tool, default, runtime, replay, session, external, other).", "host", "decider"),
		StdinWrites:  f.counter("stdin_writes_total", "Writes to agents' stdin, by outcome (ok, timeout, error).", "host", "outcome"),
		StdinSeconds: f.classic("stdin_write_seconds", "Time each write to an agent's stdin took.", []float64{.00001, .0001, .001, .01, .1, 1, 10}, "host"),
		ResultChecks: f.counter("result_checks_total", "Typed results checked against their schema, by outcome (fit; reprompted: a new prompt said what was wrong; failed: the session ended in error).", "host", "outcome"),
	}
}
