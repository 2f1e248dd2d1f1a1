package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/actorio"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// storeTimeout bounds each read or write of the run's record.
const storeTimeout = 10 * time.Second

// Config is what a Run needs.
type Config struct {
	Pipeline *config.Pipeline
	Hosts    map[string]*config.Host // the manifest's, for each stage host's retries
	ID       string                  // the run's id
	Params   map[string]string
	// Env is what the node's agents share: the run uses its node's name, connection,
	// metrics, log, audit, tracer (a span of the run on this node and of each stage,
	// the stage's session's parent) and routines (its store reads and writes).
	*agent.Env
	Store *store.PipelineStore
	// ReadAudit reads a session's audit records: a stage started again is told of its
	// earlier attempts. nil: it is not.
	ReadAudit func(ctx context.Context, session string) ([]*wire.AuditRecord, error)
	// Trace is the context of the span the run's is a child of: the one its task's
	// client sent; nil, a trace of its own.
	Trace context.Context
}

// RunStage asks the parent to run a stage's session; its agent.Result comes back to
// Start.Notify, the run.
type RunStage struct {
	Host  string
	Start *agent.StartSession
}

// Ended tells the parent that the run is over for this node: ended (Run.Outcome set),
// taken over by another node (Lost), handed on at a stage's end because the node
// drains (Yielded), or not recorded (Err). A yielded run's task, or an unrecorded one's,
// goes back to the queue for another node to go on with.
type Ended struct {
	PID     *actor.PID
	Run     *wire.PipelineRun
	Lost    bool
	Yielded bool
	Err     error
}

// Yield asks the run to stop before its next stage starts: the node drains.
type Yield struct{}

type (
	loaded struct {
		run *wire.PipelineRun
		rev uint64
		err error
	}
	saved struct {
		rev  uint64
		err  error
		then func()
	}
	// earlier is what a stage started again had done before, read from the audit.
	earlier struct {
		stage   *RunStage
		records []*wire.AuditRecord
		err     error
	}
)

// Props returns the props of the Run cfg describes.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &Run{cfg: cfg, log: cfg.Log.With("pipeline", cfg.Pipeline.Name, "run", cfg.ID)}
	})
}

// Run is the actor of one pipeline run.
type Run struct {
	cfg    Config
	log    *slog.Logger
	system *actor.ActorSystem
	self   *actor.PID
	parent *actor.PID

	run     *wire.PipelineRun
	rev     uint64
	current int // index of the stage running
	begun   time.Time
	over    bool
	yield   bool // stop before the next stage

	trace     context.Context // the run's span's, when traced
	span      trace.Span      // nil when not traced
	stageSpan trace.Span      // the running stage's
}

// Receive implements actor.Actor. It never blocks: the store is read and written on
// goroutines that report back.
func (r *Run) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		r.system, r.self, r.parent = c.ActorSystem(), c.Self(), c.Parent()
		r.load()
	case *loaded:
		r.onLoaded(m)
	case *saved:
		r.onSaved(m)
	case *agent.Result:
		r.onStageEnded(m)
	case *Yield:
		r.yield = true
	case *earlier:
		if m.err != nil {
			r.log.Warn("a stage started again could not read its earlier attempts from the audit; it starts without them", "err", m.err)
		}
		m.stage.Start.Previous = wire.PreviousFromAudit(m.records, m.stage.Start.Attempt)
		r.system.Root.Send(r.parent, m.stage)
	}
}

// io runs op off the actor within storeTimeout and sends its report to the actor.
func (r *Run) io(op func(ctx context.Context) any) {
	actorio.Do(r.cfg.Routines, actorio.Mailbox{System: r.system, PID: r.self}, storeTimeout, op)
}

func (r *Run) load() {
	r.io(func(ctx context.Context) any {
		run, rev, err := r.cfg.Store.Get(ctx, r.cfg.ID)
		return &loaded{run: run, rev: rev, err: err}
	})
}

// save writes the run over the revision read last; then runs once it is stored.
func (r *Run) save(then func()) {
	run, rev := r.snapshot(), r.rev
	r.io(func(ctx context.Context) any {
		next, err := r.cfg.Store.Put(ctx, run, rev)
		return &saved{rev: next, err: err, then: then}
	})
}

// snapshot copies the run for the writing goroutine.
func (r *Run) snapshot() *wire.PipelineRun {
	c := *r.run
	c.Stages = make([]*wire.StageRun, len(r.run.Stages))
	for i, s := range r.run.Stages {
		sc := *s
		c.Stages[i] = &sc
	}
	return &c
}

func (r *Run) onLoaded(m *loaded) {
	switch {
	case m.err != nil:
		r.end(&Ended{Err: m.err})
		return
	case m.run == nil:
		r.run = r.fresh()
	case m.run.Outcome != "":
		// Ended before: a task delivered again after its run ended. Nothing runs again.
		r.run, r.rev = m.run, m.rev
		r.end(&Ended{Run: r.run})
		return
	default:
		r.run, r.rev = m.run, m.rev
		r.log.Info("resuming pipeline run", "previous_node", m.run.Node)
	}
	r.run.Node = r.cfg.Node
	r.startSpan()
	r.save(r.next)
}

func (r *Run) fresh() *wire.PipelineRun {
	run := &wire.PipelineRun{ID: r.cfg.ID, Pipeline: r.cfg.Pipeline.Name, Params: r.cfg.Params, Node: r.cfg.Node, Started: time.Now().UnixMilli()}
	for _, s := range r.cfg.Pipeline.Stages {
		run.Stages = append(run.Stages, &wire.StageRun{Name: s.Name, Host: s.Host, Outcome: wire.StagePending})
	}
	return run
}

func (r *Run) onSaved(m *saved) {
	switch {
	case errors.Is(m.err, store.ErrRunTaken):
		r.log.Warn("pipeline run taken over by another node; stopping here")
		r.end(&Ended{Run: r.run, Lost: true})
	case m.err != nil:
		r.end(&Ended{Run: r.run, Err: m.err})
	default:
		r.rev = m.rev
		if m.then != nil {
			m.then()
		}
	}
}

// next starts the first stage not yet done, or ends the run.
func (r *Run) next() {
	for i, st := range r.run.Stages {
		if st.Outcome == wire.StageOK {
			continue
		}
		r.startStage(i)
		return
	}
	r.finish(wire.StageOK, "")
}

func (r *Run) startStage(i int) {
	if r.yield {
		r.end(&Ended{Run: r.run, Yielded: true})
		return
	}
	r.current = i
	spec, st := r.cfg.Pipeline.Stages[i], r.run.Stages[i]
	if st.Outcome == wire.StageRunning {
		// It was running on a node that is gone: it starts again, as a new attempt.
		r.cfg.Metrics.PipelineStages.WithLabelValues(r.run.Pipeline, st.Name, "resumed").Inc()
	}
	prompt, err := spec.Template.Render(r.run.Params, r.outputs())
	if err != nil {
		st.Outcome, st.Error = wire.StageError, fmt.Sprintf("stage %q: the prompt cannot be built: %v", st.Name, err)
		r.stageEnded(st, 0)
		r.finish(wire.StageError, st.Error)
		return
	}
	st.Outcome, st.Attempts, st.Node, st.Error = wire.StageRunning, st.Attempts+1, r.cfg.Node, ""
	st.Session = r.run.ID + "-" + st.Name
	r.save(func() {
		if r.yield { // it starts on the next node, as a resumed stage
			r.end(&Ended{Run: r.run, Yielded: true})
			return
		}
		r.begun = time.Now()
		r.publish(wire.EventStageStarted, r.stageEvent(st))
		stageTrace := r.startStageSpan(st)
		retries := 0
		if h := r.cfg.Hosts[spec.Host]; h != nil {
			retries = h.Retries
		}
		stage := &RunStage{Host: spec.Host, Start: &agent.StartSession{
			Session: st.Session, Task: r.run.ID, Prompt: prompt, Attempt: (st.Attempts - 1) * (retries + 1),
			Pipeline: r.run.Pipeline, Stage: st.Name, Routes: spec.Routes, Result: spec.Result, Notify: r.self,
			From: r.workspaceFrom(), Trace: stageTrace}}
		if b := r.cfg.Pipeline.Budget; b != nil {
			stage.Start.Budget, stage.Start.Raises, stage.Start.BudgetFrom, stage.Start.Spent = b, r.run.Raises, time.UnixMilli(r.run.Started), r.spent()
		}
		if st.Attempts == 1 || r.cfg.ReadAudit == nil {
			r.system.Root.Send(r.parent, stage)
			return
		}
		r.io(func(ctx context.Context) any {
			records, err := r.cfg.ReadAudit(ctx, st.Session)
			return &earlier{stage: stage, records: records, err: err}
		})
	})
}

// workspaceFrom is where the next stage's workspace starts, on a host with workspaces:
// on the run's branch, where the last stage that had a workspace left it (the run's
// base, before any), in that stage's mirror.
func (r *Run) workspaceFrom() workspace.From {
	from := workspace.From{Name: r.run.ID}
	for _, st := range r.run.Stages {
		if st.Outcome == wire.StageOK && st.Workspace != nil && st.Workspace.Head != "" {
			from.Commit, from.Mirror = st.Workspace.Head, st.Workspace.Mirror
		}
	}
	return from
}

// spent is what the run's ended stages cost.
func (r *Run) spent() *wire.Spend {
	var all []*wire.Spend
	for _, st := range r.run.Stages {
		all = append(all, st.Spend)
	}
	return wire.SpendTotal(all...)
}

// outputs are the finished stages' results, for the next prompt.
func (r *Run) outputs() map[string]config.StageOutput {
	out := map[string]config.StageOutput{}
	for _, st := range r.run.Stages {
		if st.Outcome == wire.StageOK {
			out[st.Name] = config.StageOutput{Text: st.Text, Data: st.Data}
		}
	}
	return out
}

func (r *Run) onStageEnded(res *agent.Result) {
	if r.over || r.run == nil {
		return
	}
	st := r.run.Stages[r.current]
	if res.Session != st.Session || st.Outcome != wire.StageRunning {
		return
	}
	if res.OK {
		st.Outcome, st.Text, st.Data = wire.StageOK, res.Text, res.Data
	} else {
		st.Outcome, st.Error = wire.StageError, res.Error
	}
	st.Workspace, st.Spend = res.Workspace, res.Spend
	r.run.Raises = max(r.run.Raises, res.Raises)
	st.Duration = float64(time.Since(r.begun).Microseconds()) / 1000
	r.stageEnded(st, res.Attempt)
	if !res.OK {
		r.finish(wire.StageError, fmt.Sprintf("stage %q failed: %s", st.Name, res.Error))
		return
	}
	r.save(r.next)
}

func (r *Run) stageEnded(st *wire.StageRun, attempt int) {
	r.endStageSpan(st)
	r.cfg.Metrics.PipelineStages.WithLabelValues(r.run.Pipeline, st.Name, st.Outcome).Inc()
	ev := r.stageEvent(st)
	ev.Outcome, ev.Error, ev.Data, ev.Duration = st.Outcome, st.Error, st.Data, st.Duration
	r.publish(wire.EventStageEnded, ev)
}

func (r *Run) stageEvent(st *wire.StageRun) *wire.StageEvent {
	return &wire.StageEvent{Run: r.run.ID, Pipeline: r.run.Pipeline, Stage: st.Name, Host: st.Host, Session: st.Session,
		Attempt: st.Attempts, Node: r.cfg.Node}
}

// finish records the run's outcome, then reports it.
func (r *Run) finish(outcome, why string) {
	r.run.Outcome, r.run.Error, r.run.Ended, r.run.Node = outcome, why, time.Now().UnixMilli(), r.cfg.Node
	r.save(func() {
		r.cfg.Metrics.Pipelines.WithLabelValues(r.run.Pipeline, outcome).Inc()
		r.cfg.Audit(wire.AuditID(r.run.ID, 0, "pipeline.ended"), &wire.AuditRecord{Kind: wire.EventPipelineEnded, Time: r.run.Ended,
			Node: r.cfg.Node, Host: r.run.Pipeline, Session: r.run.ID, Pipeline: r.run.Pipeline, Outcome: outcome, Error: why,
			Duration: float64(r.run.Ended - r.run.Started)})
		r.end(&Ended{Run: r.run})
	})
}

func (r *Run) end(e *Ended) {
	if r.over {
		return
	}
	r.over = true
	r.endSpan(e)
	e.PID = r.self
	if e.Run != nil && e.Run.Outcome != "" && !e.Lost && e.Err == nil {
		r.publish(wire.EventPipelineEnded, e.Run)
	}
	r.system.Root.Send(r.parent, e)
}

func (r *Run) publish(typ string, v any) {
	data, _ := json.Marshal(v)
	if err := r.cfg.Conn.PublishRequest(wire.EventSubject(r.cfg.Pipeline.Name, r.cfg.ID, typ), wire.EventMark, data); err != nil {
		r.cfg.Metrics.PublishErrors.WithLabelValues("event").Inc()
	}
}
