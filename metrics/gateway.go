package metrics

import "github.com/prometheus/client_golang/prometheus"

// GatewayMetrics are the metric families of the node's model gateway: the calls its
// agents made to their models, as the providers answered them.
type GatewayMetrics struct {
	ModelRequests *prometheus.CounterVec   // connection, model, code
	ModelTokens   *prometheus.CounterVec   // connection, model, kind (input, output, cache_read, cache_write)
	ModelSeconds  *prometheus.HistogramVec // connection
	// ModelLimitWait is how long calls waited for their connection's rate_limit.
	ModelLimitWait *prometheus.HistogramVec // connection
	// GatewayRefused counts calls the gateway answered itself, by reason (token,
	// session, connection, endpoint, body).
	GatewayRefused *prometheus.CounterVec
	// UsageClaims counts the sessions of hosts behind the gateway whose agents reported
	// usage, by whether it agreed with what the gateway measured.
	UsageClaims *prometheus.CounterVec // host, agreed (true, false)
}

func newGatewayMetrics(f *families) GatewayMetrics {
	return GatewayMetrics{
		ModelRequests:  f.counter("model_requests_total", "Model calls agents made through the node's gateway, by connection, model (other: one the connection and [pricing] do not name) and the provider's HTTP status (error: no answer).", "connection", "model", "code"),
		ModelTokens:    f.counter("model_tokens_total", "Tokens of model calls through the gateway, as the provider counted them, by kind (input, output, cache_read, cache_write).", "connection", "model", "kind"),
		ModelSeconds:   f.histogram("model_request_seconds", "Time model calls through the gateway took, from the agent's request to the end of the provider's answer.", waitBuckets, "connection"),
		ModelLimitWait: f.histogram("model_limit_wait_seconds", "Time calls through the gateway waited for their connection's rate_limit (requests_per_minute, concurrency) before they were passed on.", waitBuckets, "connection"),
		GatewayRefused: f.counter("gateway_refused_total", "Calls the model gateway refused without reaching a provider, by reason (token: not one it issued, or revoked; session: no session runs on the agent; connection: another connection's token; endpoint: not a model API; held: the session is paused at its budget; body: too large or not JSON).", "reason"),
		UsageClaims:    f.counter("usage_claims_total", "Sessions behind the gateway whose agent reported its usage, by whether the claim agreed with the tokens the gateway measured (the measured spend counts either way).", "host", "agreed"),
	}
}
