package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/wire"
)

// startSpan starts the span of the run on this node, when the node traces.
func (r *Run) startSpan() {
	if r.cfg.Tracer == nil {
		return
	}
	parent := r.cfg.Trace
	if parent == nil {
		parent = context.Background()
	}
	r.trace, r.span = r.cfg.Tracer.Start(parent, "pipeline "+r.run.Pipeline, trace.WithAttributes(
		attribute.String("agentmux.pipeline", r.run.Pipeline), attribute.String("agentmux.run", r.run.ID), attribute.String("agentmux.node", r.cfg.Node)))
}

// startStageSpan starts stage st's span, a child of the run's, and returns its
// context: its session's parent (nil when not traced).
func (r *Run) startStageSpan(st *wire.StageRun) context.Context {
	if r.span == nil {
		return nil
	}
	ctx, span := r.cfg.Tracer.Start(r.trace, "stage "+st.Name, trace.WithAttributes(
		attribute.String("agentmux.pipeline", r.run.Pipeline), attribute.String("agentmux.run", r.run.ID),
		attribute.String("agentmux.stage", st.Name), attribute.String("agentmux.host", st.Host), attribute.Int("agentmux.attempts", st.Attempts)))
	r.stageSpan = span
	return ctx
}

// endStageSpan ends the running stage's span with its outcome.
func (r *Run) endStageSpan(st *wire.StageRun) {
	if r.stageSpan == nil {
		return
	}
	r.stageSpan.SetAttributes(attribute.String("agentmux.outcome", st.Outcome))
	if st.Outcome == wire.StageError {
		r.stageSpan.SetStatus(codes.Error, st.Error)
	}
	r.stageSpan.End()
	r.stageSpan = nil
}

// endSpan ends the run's span on this node: ended, handed on, or lost.
func (r *Run) endSpan(e *Ended) {
	if r.span == nil {
		return
	}
	if r.stageSpan != nil { // handed on or lost mid-stage
		r.stageSpan.End()
	}
	outcome := "handed on"
	if e.Run != nil && e.Run.Outcome != "" {
		outcome = e.Run.Outcome
	}
	r.span.SetAttributes(attribute.String("agentmux.outcome", outcome))
	if e.Err != nil {
		r.span.SetStatus(codes.Error, e.Err.Error())
	} else if outcome == wire.StageError && e.Run != nil {
		r.span.SetStatus(codes.Error, e.Run.Error)
	}
	r.span.End()
}
