package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// requestMetrics are the metrics an agent counts each request in, each looked up by its
// labels once: a lookup hashes every label value, many times a second.
type requestMetrics struct {
	requests map[requestLabels]prometheus.Counter // requests_total by type and outcome
	answers  map[string]prometheus.Counter        // answers_total by decider kind
	wait     map[protocol.Type]prometheus.Observer
}

type requestLabels struct {
	typ     protocol.Type
	outcome protocol.Outcome
}

// request counts one request of host that ended after wait.
func (r *requestMetrics) request(m *metrics.Set, host string, typ protocol.Type, outcome protocol.Outcome, deciderKind string, wait time.Duration) {
	if r.requests == nil {
		r.requests, r.answers, r.wait = map[requestLabels]prometheus.Counter{}, map[string]prometheus.Counter{}, map[protocol.Type]prometheus.Observer{}
	}
	rc, ok := r.requests[requestLabels{typ, outcome}]
	if !ok {
		rc = m.Requests.WithLabelValues(host, string(typ), string(outcome))
		r.requests[requestLabels{typ, outcome}] = rc
	}
	rc.Inc()
	ac, ok := r.answers[deciderKind]
	if !ok {
		ac = m.Answers.WithLabelValues(host, deciderKind)
		r.answers[deciderKind] = ac
	}
	ac.Inc()
	w, ok := r.wait[typ]
	if !ok {
		w = m.RequestWait.WithLabelValues(string(typ))
		r.wait[typ] = w
	}
	w.Observe(wait.Seconds())
}
