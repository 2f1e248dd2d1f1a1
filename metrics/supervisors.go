package metrics

import "github.com/prometheus/client_golang/prometheus"

// SupervisorMetrics are the Asker's and the supervisors' metric families: asks sent, decisions, model calls, requests handed to people.
type SupervisorMetrics struct {
	AskRequests  *prometheus.CounterVec // outcome (answered, no_responders, timeout, error, reasked, late)
	Decisions    *prometheus.CounterVec // supervisor, outcome
	DecisionTime *prometheus.HistogramVec
	LLMRequests  *prometheus.CounterVec // supervisor, outcome (ok, error, timeout, unparseable)
	LLMSeconds   *prometheus.HistogramVec
	LLMTokens    *prometheus.CounterVec // supervisor, direction (input, output)
	LLMCost      *prometheus.CounterVec // supervisor, model
	HumanPending *prometheus.CounterVec // supervisor
	Shadow       *prometheus.CounterVec // supervisor, agreed (true, false, none)
	Promoted     *prometheus.GaugeVec   // supervisor: 1 while promoted
}

func newSupervisorMetrics(f *families) SupervisorMetrics {
	return SupervisorMetrics{
		AskRequests:  f.counter("ask_requests_total", "NATS requests to supervisors, by outcome (answered, no_responders, timeout, error; reasked: a member went silent or let go, or the connection came back; late: an answer after the first or after the request was settled).", "outcome"),
		Decisions:    f.counter("supervisor_decisions_total", "Decisions made by local supervisors, by outcome (decided, default, error, expired).", "supervisor", "outcome"),
		DecisionTime: f.histogram("supervisor_decision_seconds", "Time local supervisors took to decide.", waitBuckets, "supervisor"),
		LLMRequests:  f.counter("llm_requests_total", "Model calls by llm supervisors, by outcome (ok, error, timeout, unparseable).", "supervisor", "outcome"),
		LLMSeconds:   f.histogram("llm_request_seconds", "Time model calls took.", waitBuckets, "supervisor"),
		LLMTokens:    f.counter("llm_tokens_total", "Tokens of model calls, by direction (input, output).", "supervisor", "direction"),
		LLMCost:      f.counter("llm_cost_usd_total", "What the llm supervisors' model calls cost in US dollars, priced by the manifest's [pricing] (models it does not price are not counted).", "supervisor", "model"),
		HumanPending: f.counter("human_requests_total", "Requests handed to a person (human supervisors and escalations).", "supervisor"),
		Shadow:       f.counter("shadow_decisions_total", "Decisions of routes' shadow supervisors, never given, by whether they agreed with the answer given (true, false; none: the shadow gave no answer before its session ended).", "supervisor", "agreed"),
		Promoted:     f.gauge("shadow_promoted", "1 while the shadow supervisor is promoted fleet-wide to decide the routes it shadows (agentmux policy promote); 0 once demoted.", "supervisor"),
	}
}
