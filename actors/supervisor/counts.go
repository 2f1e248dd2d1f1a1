package supervisor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/metrics"
)

// counts are one supervisor's decision metrics, looked up once: a lookup hashes every
// label value, and a supervisor decides many times a second.
type counts struct {
	time                                                                prometheus.Observer
	decided, useDefault, declined, deferred, errored, expired, released prometheus.Counter
	humanPending                                                        prometheus.Counter
}

func newCounts(m *metrics.Set, name string) counts {
	d := func(outcome string) prometheus.Counter { return m.Decisions.WithLabelValues(name, outcome) }
	return counts{time: m.DecisionTime.WithLabelValues(name), decided: d("decided"), useDefault: d("default"), declined: d("declined"),
		deferred: d("deferred"), errored: d("error"), expired: d("expired"), released: d("released"),
		humanPending: m.HumanPending.WithLabelValues(name)}
}
