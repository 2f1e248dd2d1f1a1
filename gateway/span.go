package gateway

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// startSpan starts the span of call c in its session's trace, as OpenTelemetry's GenAI
// conventions name a model call: "chat <model>", a client span; a no-op span without a
// tracer.
func (g *Gateway) startSpan(parent context.Context, c *call, a api) trace.Span {
	if g.cfg.Tracer == nil {
		return noop.Span{}
	}
	_, span := g.cfg.Tracer.Start(parent, "chat "+c.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", a.String()),
		attribute.String("gen_ai.request.model", c.model), attribute.String("agentmux.connection", c.conn.Name),
		attribute.String("agentmux.session", c.session)))
	return span
}

// endSpan ends a call's span with what the provider answered: its model, tokens, why
// it ended, its status.
func endSpan(span trace.Span, c Call) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("gen_ai.response.model", c.Model), attribute.Int("http.response.status_code", c.Status))
	if c.Measured {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", c.Usage.Input+c.Usage.CacheRead+c.Usage.CacheWrite),
			attribute.Int64("gen_ai.usage.output_tokens", c.Usage.Output),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", c.Usage.CacheRead),
			attribute.Int64("gen_ai.usage.cache_creation.input_tokens", c.Usage.CacheWrite))
	}
	if len(c.Finish) > 0 {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", c.Finish))
	}
	switch {
	case c.Status == 0:
		span.SetAttributes(attribute.String("error.type", "unreachable"))
		span.SetStatus(codes.Error, "the provider was not reached")
	case c.Status >= http.StatusBadRequest:
		span.SetAttributes(attribute.String("error.type", fmt.Sprint(c.Status)))
		span.SetStatus(codes.Error, http.StatusText(c.Status))
	}
	span.End()
}
