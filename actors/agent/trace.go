package agent

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/tracing"
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

// sessionSpan starts the span of session m, when the node traces: when m waits for a
// process of its own, before that process starts, so the process is given the span's
// context (TRACEPARENT); else as the session starts on the process.
func (a *Agent) sessionSpan(m *StartSession) (context.Context, trace.Span) {
	if a.cfg.Tracer == nil {
		return nil, nil
	}
	parent := m.Trace
	if parent == nil {
		parent = context.Background()
	}
	return a.cfg.Tracer.Start(parent, "session "+a.host.Name, trace.WithAttributes(
		attribute.String("agentmux.session", m.Session), attribute.String("agentmux.host", a.host.Name), attribute.String("agentmux.node", a.cfg.Node),
		attribute.String("agentmux.task", m.Task), attribute.Int("agentmux.attempt", m.Attempt),
		attribute.String("agentmux.pipeline", m.Pipeline), attribute.String("agentmux.stage", m.Stage)))
}

// traceEnv is the environment that gives a process the context of the span in ctx,
// as Claude Code and Codex read it: TRACEPARENT and TRACESTATE; nil when untraced.
func traceEnv(ctx context.Context) []string {
	parent, state := tracing.Context(ctx)
	if parent == "" {
		return nil
	}
	env := []string{"TRACEPARENT=" + parent}
	if state != "" {
		env = append(env, "TRACESTATE="+state)
	}
	return env
}

// tracedPrompt is p with the W3C context of session s's span, when it has one.
func tracedPrompt(s *session, p protocol.Prompt) protocol.Prompt {
	if s.trace != nil {
		p.Traceparent, p.Tracestate = tracing.Context(s.trace)
	}
	return p
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
func (a *Agent) startRequestSpan(s *session, p *request) {
	if s.span == nil {
		return
	}
	p.trace, p.span = a.cfg.Tracer.Start(s.trace, "request "+string(p.msg.Type), trace.WithAttributes(
		attribute.String("agentmux.session", s.id), attribute.String("agentmux.request", p.id),
		attribute.String("agentmux.request.type", string(p.msg.Type)), attribute.String("agentmux.request.text", cutLine(p.msg.RequestText(), 200))))
}

// endRequestSpan ends request p's span with its answer.
func endRequestSpan(p *request, outcome protocol.Outcome, decider string) {
	if p.span == nil {
		return
	}
	p.span.SetAttributes(attribute.String("agentmux.outcome", string(outcome)), attribute.String("agentmux.decider", decider))
	p.span.End()
}
