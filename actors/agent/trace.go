package agent

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
)

// traceCtx is the current session's span context, for the log lines about it (the
// node's log adds its trace and span ids); Background without one.
func (a *Agent) traceCtx() context.Context {
	if a.sess != nil && a.sess.trace != nil {
		return a.sess.trace
	}
	return context.Background()
}

// startSpan starts session s's span, when the node traces.
func (a *Agent) startSpan(s *session) {
	if a.cfg.Tracer == nil {
		return
	}
	m := s.start
	parent := m.Trace
	if parent == nil {
		parent = context.Background()
	}
	s.trace, s.span = a.cfg.Tracer.Start(parent, "session "+a.host.Name, trace.WithAttributes(
		attribute.String("agentmux.session", s.id), attribute.String("agentmux.host", a.host.Name), attribute.String("agentmux.node", a.cfg.Node),
		attribute.String("agentmux.task", m.Task), attribute.Int("agentmux.attempt", m.Attempt),
		attribute.String("agentmux.pipeline", m.Pipeline), attribute.String("agentmux.stage", m.Stage)))
}

// endSpan ends a session's span with how it ended.
func endSpan(span trace.Span, r *Result) {
	if span == nil {
		return
	}
	outcome := "ok"
	switch {
	case r.BudgetExceeded:
		outcome = wire.OutcomeBudgetExceeded
	case !r.OK:
		outcome = "error"
	}
	span.SetAttributes(attribute.String("agentmux.outcome", outcome))
	if !r.OK {
		span.SetStatus(codes.Error, r.Error)
	}
	span.End()
}

// startRequestSpan starts request p's span, a child of its session's.
func (a *Agent) startRequestSpan(s *session, p *pending) {
	if s.span == nil {
		return
	}
	p.trace, p.span = a.cfg.Tracer.Start(s.trace, "request "+string(p.msg.Type), trace.WithAttributes(
		attribute.String("agentmux.session", s.id), attribute.String("agentmux.request", p.id),
		attribute.String("agentmux.request.type", string(p.msg.Type)), attribute.String("agentmux.request.text", cutLine(p.msg.RequestText(), 200))))
}

// endRequestSpan ends request p's span with its answer.
func endRequestSpan(p *pending, outcome protocol.Outcome, decider string) {
	if p.span == nil {
		return
	}
	p.span.SetAttributes(attribute.String("agentmux.outcome", string(outcome)), attribute.String("agentmux.decider", decider))
	p.span.End()
}
