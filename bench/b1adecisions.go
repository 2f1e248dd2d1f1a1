package bench

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// b1aNobody is the subject B1a asks its unrouted questions on, where no supervisor
// runs. A node asks a route's supervisor whether or not one runs here (another node or
// a process outside may run it) and learns there is none from the server's
// no-responders reply; so does B1a.
const b1aNobody = "agentmux.bench.nobody.b1a"

// decisions is what a node does with each request besides writing it down, done by B1a
// in the most direct way: its supervisor reads the request and answers by its rule,
// timing and counting its decisions; an unrouted question is asked of its route's
// supervisor, whom nobody runs; an answer is checked against its request before it is
// written, and every request is counted by type and outcome, its answer by the kind of
// decider, and its wait in a histogram — the metrics a node keeps (metrics.Set).
type decisions struct {
	rule     map[protocol.Type]json.RawMessage // the supervisor's answer by request type
	requests *prometheus.CounterVec            // type, outcome
	answers  *prometheus.CounterVec            // decider kind
	wait     *prometheus.HistogramVec          // type
	asks     *prometheus.CounterVec            // outcome: answered, no_responders, timeout, error
	decided  *prometheus.CounterVec            // the supervisor's decisions: decided, error
	decide   prometheus.Histogram              // the supervisor's time to decide
}

func newDecisions() *decisions {
	r := prometheus.NewRegistry()
	d := &decisions{
		rule: map[protocol.Type]json.RawMessage{protocol.TypeQuestion: json.RawMessage(`"unit"`), protocol.TypeApproval: json.RawMessage(`"yes"`)},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b1a_requests_total", Help: "Requests ended, by type and outcome."},
			[]string{"type", "outcome"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b1a_answers_total", Help: "Answers written, by the kind of decider."},
			[]string{"decider"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "b1a_request_wait_seconds", Help: "Time from a request being read to its answer being written.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"type"}),
		asks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b1a_ask_requests_total", Help: "Requests to supervisors, by outcome."},
			[]string{"outcome"}),
		decided: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "b1a_supervisor_decisions_total", Help: "The supervisor's decisions, by outcome."},
			[]string{"outcome"}),
		decide: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "b1a_supervisor_decision_seconds", Help: "The supervisor's time to decide.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10)}),
	}
	r.MustRegister(d.requests, d.answers, d.wait, d.asks, d.decided, d.decide)
	return d
}

// supervise answers the requests on subject: each read, and answered by the rule for
// its type (nothing, which is invalid, for a type the rule does not know).
func (d *decisions) supervise(nc *nats.Conn, subject string) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		begun := time.Now()
		var req struct {
			Type protocol.Type `json:"type"`
		}
		outcome := "decided"
		if err := json.Unmarshal(m.Data, &req); err != nil {
			outcome = "error"
		}
		answer := d.rule[req.Type]
		d.decide.Observe(time.Since(begun).Seconds())
		d.decided.WithLabelValues(outcome).Inc()
		_ = m.Respond(answer)
	})
	if err != nil {
		return nil, err
	}
	return sub, nc.Flush()
}

// asked counts an ask that ended with err.
func (d *decisions) asked(err error) {
	outcome := "answered"
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		outcome = "no_responders"
	case errors.Is(err, nats.ErrTimeout):
		outcome = "timeout"
	case err != nil:
		outcome = "error"
	}
	d.asks.WithLabelValues(outcome).Inc()
}

// check is the response to m when value is its supervisor's answer: value when it fits
// the request, def (invalid, with the reason) when not.
func (d *decisions) check(m *protocol.Message, value, def json.RawMessage) (json.RawMessage, protocol.Outcome, string) {
	if err := protocol.ValidateAnswer(m, value); err != nil {
		return def, protocol.OutcomeInvalid, err.Error()
	}
	return value, protocol.OutcomeAnswered, ""
}

// count counts request m, answered by decider after wait.
func (d *decisions) count(m *protocol.Message, outcome protocol.Outcome, decider string, wait time.Duration) {
	d.requests.WithLabelValues(string(m.Type), string(outcome)).Inc()
	d.answers.WithLabelValues(metrics.DeciderKind(decider)).Inc()
	d.wait.WithLabelValues(string(m.Type)).Observe(wait.Seconds())
}
