package metrics

import "github.com/prometheus/client_golang/prometheus"

// BusMetrics are the node's NATS connection's metric families: reconnects and errors, and what goes out on it: events, audit records, notifications.
type BusMetrics struct {
	PublishErrors   *prometheus.CounterVec // kind (event, audit)
	AuditPublishes  prometheus.Counter
	AuditTruncated  prometheus.Counter
	NATSReconnects  prometheus.Counter
	NATSDisconnects prometheus.Counter
	NATSAsyncErrors prometheus.Counter
	SlowConsumers   prometheus.Counter
	Notifications   *prometheus.CounterVec // notify, event, outcome (sent, retried, failed, dropped, invalid)
}

func newBusMetrics(f *families) BusMetrics {
	return BusMetrics{
		PublishErrors:   f.counter("publish_errors_total", "NATS publishes that failed, by kind (event, audit).", "kind"),
		AuditPublishes:  f.plain("audit_publishes_total", "Audit records published."),
		AuditTruncated:  f.plain("audit_truncated_total", "Audit records over the server's payload limit, stored with their longest fields cut."),
		NATSReconnects:  f.plain("nats_reconnects_total", "Reconnections to NATS."),
		NATSDisconnects: f.plain("nats_disconnects_total", "Disconnections from NATS."),
		NATSAsyncErrors: f.plain("nats_async_errors_total", "Asynchronous NATS errors such as slow consumers."),
		SlowConsumers:   f.plain("nats_slow_consumers_total", "NATS subscriptions of this node that fell behind and lost messages."),
		Notifications:   f.counter("notifications_total", "Webhook notifications, by outcome (sent; retried: a try failed and another follows; failed: given up at the deadline or refused; dropped: too many waiting; invalid).", "notify", "event", "outcome"),
	}
}
