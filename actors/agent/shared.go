package agent

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// Shared is what every agent of one host shares: its logger, and its metrics, each
// looked up by its labels once for the host. A lookup hashes every label value; a node
// that starts an agent per session would otherwise pay for a dozen each time, and a
// logger's attributes are formatted when it is made. The router makes one per host and
// gives it to each agent it spawns. It is safe for concurrent use.
type Shared struct {
	host   string
	m      *metrics.Set
	log    *slog.Logger
	writes writeCounts
	starts prometheus.Counter
	events prometheus.Counter // publish errors of events

	mu       sync.RWMutex
	exits    map[string]prometheus.Counter        // agent_exits_total by reason
	agents   map[string]prometheus.Gauge          // agents by state
	messages map[protocol.Type]prometheus.Counter // messages_total by type
	requests map[requestLabels]prometheus.Counter // requests_total by type and outcome
	answers  map[string]prometheus.Counter        // answers_total by decider kind
	wait     map[protocol.Type]prometheus.Observer
}

type requestLabels struct {
	typ     protocol.Type
	outcome protocol.Outcome
}

// NewShared makes what host's agents share, counting in m and logging to log.
func NewShared(host string, m *metrics.Set, log *slog.Logger) *Shared {
	return &Shared{host: host, m: m, log: log.With("host", host),
		writes: writeCounts{
			ok:         m.StdinWrites.WithLabelValues(host, "ok"),
			timeout:    m.StdinWrites.WithLabelValues(host, "timeout"),
			failed:     m.StdinWrites.WithLabelValues(host, "error"),
			seconds:    m.StdinSeconds.WithLabelValues(host),
			frameBytes: m.FrameBytes.WithLabelValues(host),
		},
		starts: m.AgentStarts.WithLabelValues(host),
		events: m.PublishErrors.WithLabelValues("event"),
		exits:  map[string]prometheus.Counter{}, agents: map[string]prometheus.Gauge{},
		messages: map[protocol.Type]prometheus.Counter{}, requests: map[requestLabels]prometheus.Counter{},
		answers: map[string]prometheus.Counter{}, wait: map[protocol.Type]prometheus.Observer{},
	}
}

// child is m's metric for k, looked up by lookup the first time any agent of the host
// asks for it.
func child[K comparable, M any](s *Shared, m map[K]M, k K, lookup func() M) M {
	s.mu.RLock()
	v, ok := m[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	v = lookup()
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := m[k]; ok {
		return w
	}
	m[k] = v
	return v
}

func (s *Shared) exit(reason string) prometheus.Counter {
	return child(s, s.exits, reason, func() prometheus.Counter { return s.m.AgentExits.WithLabelValues(s.host, reason) })
}

func (s *Shared) agentsIn(state string) prometheus.Gauge {
	return child(s, s.agents, state, func() prometheus.Gauge { return s.m.Agents.WithLabelValues(s.host, state) })
}

func (s *Shared) message(t protocol.Type) prometheus.Counter {
	return child(s, s.messages, t, func() prometheus.Counter { return s.m.Messages.WithLabelValues(s.host, string(t)) })
}

// request counts one request that ended after wait.
func (s *Shared) request(typ protocol.Type, outcome protocol.Outcome, deciderKind string, wait time.Duration) {
	child(s, s.requests, requestLabels{typ, outcome}, func() prometheus.Counter {
		return s.m.Requests.WithLabelValues(s.host, string(typ), string(outcome))
	}).Inc()
	child(s, s.answers, deciderKind, func() prometheus.Counter { return s.m.Answers.WithLabelValues(s.host, deciderKind) }).Inc()
	child(s, s.wait, typ, func() prometheus.Observer { return s.m.RequestWait.WithLabelValues(string(typ)) }).Observe(wait.Seconds())
}
