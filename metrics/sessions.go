package metrics

import "github.com/prometheus/client_golang/prometheus"

// SessionMetrics are the router's metric families: sessions, tasks from the work queue, pipeline runs.
type SessionMetrics struct {
	SessionsActive  *prometheus.GaugeVec   // host
	Sessions        *prometheus.CounterVec // host, outcome (ok, error, budget_exceeded)
	BudgetPauses    *prometheus.CounterVec // host, decision (raised, exceeded, pending)
	SessionDuration *prometheus.HistogramVec
	Tasks           *prometheus.CounterVec // host, outcome (ok, error, invalid)
	TaskIntake      *prometheus.GaugeVec   // host: 1 while this node takes the host's queued tasks
	DailyBudgetHeld *prometheus.GaugeVec   // host: 1 while its tasks wait at its daily budget
	Pipelines       *prometheus.CounterVec // pipeline, outcome (ok, error)
	PipelineStages  *prometheus.CounterVec // pipeline, stage, outcome (ok, error, resumed)
	SessionTokens   *prometheus.CounterVec // host, model, kind (input, output, cache_read, cache_write), outcome
	SessionCost     *prometheus.CounterVec // host, model, outcome
	Checkpoints     *prometheus.CounterVec // host, outcome (saved, failed)
	Resumed         *prometheus.CounterVec // host, reason (redelivered, retried)
	Paused          *prometheus.CounterVec // host, reason (limit, hand)
	PausedNow       *prometheus.GaugeVec   // host, reason: the fleet's, as this node sees them
}

func newSessionMetrics(f *families) SessionMetrics {
	return SessionMetrics{
		SessionsActive:  f.gauge("sessions_active", "Sessions running now.", "host"),
		Sessions:        f.counter("sessions_total", "Sessions ended, by outcome (ok, error, budget_exceeded).", "host", "outcome"),
		BudgetPauses:    f.counter("budget_pauses_total", "Sessions paused at their budget, by what was decided: raised (it went on), exceeded (it ended).", "host", "decision"),
		SessionDuration: f.histogram("session_duration_seconds", "Wall time of ended sessions.", prometheus.ExponentialBuckets(0.01, 4, 10), "host"),
		Tasks:           f.counter("tasks_total", "Tasks taken from the work queue, by outcome (ok, error, invalid).", "host", "outcome"),
		TaskIntake:      f.gauge("task_intake", "1 while this node takes the host's tasks from the work queue; 0 once it drains or stops.", "host"),
		DailyBudgetHeld: f.gauge("daily_budget_held", "1 while this node holds the host's queued tasks because its sessions spent its daily budget today (UTC); 0 once a raise or the next day lets them run.", "host"),
		Pipelines:       f.counter("pipelines_total", "Pipeline runs ended, by outcome (ok, error).", "pipeline", "outcome"),
		SessionTokens:   f.counter("tokens_total", "Tokens the agents' model calls used, as the agents reported them, counted as each session ends: by host, model, kind (input, output, cache_read, cache_write) and the session's outcome.", "host", "model", "kind", "outcome"),
		SessionCost:     f.counter("cost_usd_total", "What the agents' model calls cost in US dollars, as the agents reported it or [pricing] priced it, counted as each session ends: by host, model and the session's outcome.", "host", "model", "outcome"),
		Checkpoints:     f.counter("checkpoints_total", "Sessions' checkpoints, by outcome: saved, or failed (not kept: the one before stands).", "host", "outcome"),
		Paused:          f.counter("sessions_paused_total", "Sessions paused at a checkpoint to go on later, by why: limit (their provider's usage limit, until its reset), hand (agentmux pause).", "host", "reason"),
		PausedNow:       f.gauge("sessions_paused", "Sessions of the fleet paused now, by why (limit, hand): every node reports the fleet's, so aggregate with max, not sum.", "host", "reason"),
		Resumed:         f.counter("sessions_resumed_total", "Sessions brought back from their latest checkpoint, by why they had to be: redelivered (their node died or drained, or they were paused) or retried (their attempt failed here).", "host", "reason"),
		PipelineStages:  f.counter("pipeline_stages_total", "Pipeline stages ended, by outcome (ok, error; resumed: taken up again after the node running it was gone).", "pipeline", "stage", "outcome"),
	}
}
