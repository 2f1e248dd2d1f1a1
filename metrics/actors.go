package metrics

import "github.com/prometheus/client_golang/prometheus"

// ActorMetrics are the actor system's metric families: dead letters and failures.
type ActorMetrics struct {
	DeadLetters   prometheus.Counter
	ActorFailures *prometheus.CounterVec // directive (restart, stop, resume, escalate)
}

func newActorMetrics(f *families) ActorMetrics {
	return ActorMetrics{
		DeadLetters:   f.plain("actor_dead_letters_total", "Actor messages sent to actors that had already stopped."),
		ActorFailures: f.counter("actor_failures_total", "Actor failures handled by supervision, by directive.", "directive"),
	}
}
