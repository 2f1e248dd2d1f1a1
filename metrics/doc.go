// Package metrics holds every Prometheus metric family of agentmux in a private
// registry (never the default one), and serves /metrics, /healthz and /readyz.
//
//	m := metrics.New()
//	m.Messages.WithLabelValues("worker", "progress").Inc()
//	srv, err := metrics.Serve("127.0.0.1:9464", "", m, ready, log)
//	defer srv.Close()
//
// The families are grouped by the component that owns them, a file each (sessions.go
// the router's, agents.go the agent actors', supervisors.go, bus.go, actors.go), and
// defined here, not in their components: one registry, and one list of names and help
// (Set.Families) that docs/metrics.md and the dashboards are checked against.
//
// Labels are bounded: host, type, outcome, reason, supervisor; never a session id.
// All methods are safe for concurrent use.
package metrics
