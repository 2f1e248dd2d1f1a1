package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of agentmux's spans.
const Name = "github.com/agentmux/agentmux"

// Provider makes a process's spans: exported, or none at all (Off).
type Provider struct {
	sdk    *sdktrace.TracerProvider // nil when off
	tracer trace.Tracer
}

// Off is a provider that makes no spans and adds nothing to the bus.
func Off() *Provider { return &Provider{tracer: noop.NewTracerProvider().Tracer(Name)} }

// Enabled reports whether env (os.Getenv) names a collector to export spans to, and
// refuses what agentmux cannot do: OTLP over gRPC.
func Enabled(env func(string) string) (bool, error) {
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") || env("OTEL_TRACES_EXPORTER") == "none" {
		return false, nil
	}
	if env("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	protocol := env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return false, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL=%s: agentmux exports OTLP over HTTP; set http/protobuf and point the endpoint at the collector's HTTP port (4318)", protocol)
	}
	return true, nil
}

// FromEnv is the provider the environment asks for: spans of service (its node named
// instance) exported to the collector OTEL_EXPORTER_OTLP_* names, or Off.
func FromEnv(ctx context.Context, service, instance string) (*Provider, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return Off(), err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w; check OTEL_EXPORTER_OTLP_ENDPOINT", err)
	}
	return New(sdktrace.NewBatchSpanProcessor(exp), service, instance), nil
}

// New is a provider whose spans go to sp (an exporter's batcher; a test's recorder).
func New(sp sdktrace.SpanProcessor, service, instance string) *Provider {
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service), semconv.ServiceInstanceID(instance))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
	return &Provider{sdk: sdk, tracer: sdk.Tracer(Name)}
}

// Tracer makes the process's spans.
func (p *Provider) Tracer() trace.Tracer { return p.tracer }

// On reports whether spans are made.
func (p *Provider) On() bool { return p.sdk != nil }

// Shutdown exports what is left, within ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

var propagator = propagation.TraceContext{}

// Header is ctx's span context as NATS headers (traceparent, tracestate); nil when
// ctx carries no span that is recorded or sampled.
func Header(ctx context.Context) nats.Header {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	h := nats.Header{}
	propagator.Inject(ctx, carrier(h))
	return h
}

// FromHeader is ctx with the span context h carries, if any.
func FromHeader(ctx context.Context, h nats.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, carrier(h))
}

// carrier reads and writes NATS headers by the exact keys W3C names.
type carrier nats.Header

func (c carrier) Get(key string) string { return nats.Header(c).Get(key) }
func (c carrier) Set(key, value string) { nats.Header(c).Set(key, value) }
func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Context is ctx's span context as the W3C traceparent and tracestate values ("" without
// one): what an agent is given (TRACEPARENT, or in its protocol's prompt).
func Context(ctx context.Context) (traceparent, tracestate string) {
	h := Header(ctx)
	return h.Get("traceparent"), h.Get("tracestate")
}

// Carried is a W3C traceparent and tracestate a client was given (an HTTP request's
// headers; the TRACEPARENT and TRACESTATE of its environment) as the NATS headers a
// task carries, for the task's session to join that trace; nil when traceparent is not
// a valid one.
func Carried(traceparent, tracestate string) nats.Header {
	if traceparent == "" {
		return nil
	}
	h := nats.Header{"traceparent": {traceparent}}
	if tracestate != "" {
		h["tracestate"] = []string{tracestate}
	}
	return Header(FromHeader(context.Background(), h))
}
