// Package tracing gives agentmux's work OpenTelemetry spans — a session, each request
// from its asking to its answer, a supervisor's decision on its own node, a model call —
// and carries W3C trace context from node to node in NATS headers.
//
// Spans are exported with OTLP over HTTP when the standard variables name a collector
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, with their
// _HEADERS, _TIMEOUT and OTEL_TRACES_SAMPLER). Without them tracing is off: the tracer
// is a no-op and nothing is added to the bus.
package tracing
