package router

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/actors/pipeline"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/retry"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// RunPipeline runs a pipeline on this node. Reply receives the run once it ends.
type RunPipeline struct {
	Pipeline string
	ID       string
	Params   map[string]string
	Reply    chan<- *wire.PipelineRun // buffered by the sender
}

// run is a pipeline run the router is responsible for until it ends here.
type run struct {
	pid      *actor.PID
	id       string
	pipeline string
	task     jetstream.Msg // nil for a local run
	reply    chan<- *wire.PipelineRun
}

// failedRun is the result of a run that ended here without its stages saying so.
func failedRun(id, pipeline, why string) *wire.PipelineRun {
	return &wire.PipelineRun{ID: id, Pipeline: pipeline, Outcome: wire.StageError, Error: why}
}

// startPipelines pulls queued runs of the pipelines this node can run, as many at once
// as the largest pool of their stage hosts.
func (r *Router) startPipelines(pullCtx context.Context, c actor.Context) {
	for name, cons := range r.cfg.Intake.Pipelines {
		size := 1
		for _, st := range r.cfg.Manifest.Pipelines[name].Stages {
			size = max(size, r.pools[st.Host].host.Pool)
		}
		slots, ok := r.runSlots[name] // kept across an undrain: the runs in flight hold theirs
		if !ok {
			slots = make(chan struct{}, size)
			r.runSlots[name] = slots
		}
		var gate Gate
		if r.cfg.Daily != nil {
			gate = stagesGate{Gate: r.cfg.Daily, hosts: stageHosts(r.cfg.Manifest.Pipelines[name])}
		}
		system, self := c.ActorSystem(), c.Self()
		r.cfg.Routines.Go(func(context.Context) { pull(pullCtx, system, self, name, cons, slots, gate, r.cfg.Log) })
	}
}

// stagesGate holds a pipeline's queued runs while the daily budget holds any host of
// its stages: a run would otherwise start stages on a host whose day is spent.
type stagesGate struct {
	Gate
	hosts []string
}

// Wait returns once every host of the pipeline's stages may take work.
func (g stagesGate) Wait(ctx context.Context, _ string) error {
	for _, h := range g.hosts {
		if err := g.Gate.Wait(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// stageHosts are the hosts p's stages run on, each once.
func stageHosts(p *config.Pipeline) []string {
	var out []string
	for _, st := range p.Stages {
		if !slices.Contains(out, st.Host) {
			out = append(out, st.Host)
		}
	}
	return out
}

func (r *Router) onPipelineTask(m *taskArrived) {
	release := func() { freeSlot(r.runSlots[m.host]) }
	var task wire.PipelineTask
	if err := json.Unmarshal(m.msg.Data(), &task); err != nil || !validID(task.ID) {
		r.cfg.Log.Error("pipeline task is not a JSON {id, pipeline, params} with an id of letters, digits, '_' and '-'; dropped", "subject", m.msg.Subject(), "err", err)
		r.cfg.Metrics.Tasks.WithLabelValues(m.host, "invalid").Inc()
		if err := m.msg.Term(); err != nil {
			r.cfg.Log.Warn("terminate task", "err", err)
		}
		release()
		return
	}
	if !r.taking() {
		r.nak(m.msg)
		release()
		return
	}
	for _, ru := range r.runs {
		if ru.id == task.ID { // delivered again while it runs here
			if err := m.msg.InProgress(); err != nil {
				r.cfg.Log.Warn("task in progress", "err", err)
			}
			release()
			return
		}
	}
	r.spawnRun(&run{id: task.ID, pipeline: m.host, task: m.msg}, task.Params, taskTrace(m.msg))
}

func (r *Router) runPipeline(m *RunPipeline) {
	switch {
	case r.cfg.Pipelines == nil || runnable(r.cfg.Manifest, hostsOf(r.cfg))[m.Pipeline] == nil:
		hand(r.cfg.Log, m.Reply, failedRun(m.ID, m.Pipeline, fmt.Sprintf("pipeline %q does not run on this node: each of its stages' hosts must", m.Pipeline)))
		return
	case r.stopping():
		hand(r.cfg.Log, m.Reply, failedRun(m.ID, m.Pipeline, ErrShuttingDown.Error()))
		return
	}
	r.spawnRun(&run{id: m.ID, pipeline: m.Pipeline, reply: m.Reply}, m.Params, nil)
}

func (r *Router) spawnRun(ru *run, params map[string]string, trace context.Context) {
	pid := r.c.Spawn(pipeline.Props(pipeline.Config{Pipeline: r.cfg.Manifest.Pipelines[ru.pipeline], Hosts: r.cfg.Manifest.Hosts,
		ID: ru.id, Params: params, Env: r.cfg.Env, Store: r.cfg.Pipelines, ReadAudit: r.readAudit, Trace: trace}))
	ru.pid = pid
	r.runs[pid.Id] = ru
}

// readAudit reads a session's audit records, trying again until ctx ends: right after
// a node or server dies, JetStream's API may answer "no responders" for a moment. Nil
// without JetStream intake. It runs on a goroutine, never in Receive.
func (r *Router) readAudit(ctx context.Context, session string) ([]*wire.AuditRecord, error) {
	if r.cfg.JS == nil {
		return nil, nil
	}
	pace := retry.Backoff{Min: auditRetryWait, Max: retryWaitMax}
	for {
		records, err := store.ReadAudit(ctx, r.cfg.JS, session)
		if err == nil || ctx.Err() != nil {
			return records, err
		}
		if !retry.Sleep(ctx, pace.Next(0)) {
			return nil, err
		}
	}
}

// onRunEnded settles a run's task: acknowledged once the run has ended, handed back
// when it yielded or could not be recorded, left alone when another node took it.
func (r *Router) onRunEnded(m *pipeline.Ended) {
	ru := r.runs[m.PID.Id]
	if ru == nil {
		return
	}
	delete(r.runs, m.PID.Id)
	r.c.Stop(m.PID)
	res := m.Run
	if res == nil {
		res = &wire.PipelineRun{ID: ru.id, Pipeline: ru.pipeline}
	}
	switch {
	case m.Err != nil:
		r.cfg.Log.Error("pipeline run not recorded; its task goes back to the queue", "run", ru.id, "err", m.Err)
		res = failedRun(ru.id, ru.pipeline, "the run's state could not be stored: "+m.Err.Error())
		r.settleRun(ru, "")
	case m.Lost:
		r.releaseRun(ru) // the node that took it over holds its task now
	case m.Yielded:
		r.settleRun(ru, "")
	default:
		r.settleRun(ru, res.Outcome)
	}
	hand(r.cfg.Log, ru.reply, res)
	r.maybeDrained()
}

// settleRun acknowledges the task of a run that ended with outcome, or hands it back
// (no outcome).
func (r *Router) settleRun(ru *run, outcome string) {
	if ru.task == nil {
		return
	}
	if outcome != "" {
		r.cfg.Metrics.Tasks.WithLabelValues(ru.pipeline, outcome).Inc()
		r.ack(ru.task, ru.id)
	} else {
		r.nak(ru.task)
	}
	r.releaseRun(ru)
}

// releaseRun frees the puller slot a queued run held.
func (r *Router) releaseRun(ru *run) {
	if ru.task != nil {
		freeSlot(r.runSlots[ru.pipeline])
	}
}

// onRunGone ends a run whose actor stopped without reporting (it failed).
func (r *Router) onRunGone(pid *actor.PID) bool {
	ru := r.runs[pid.Id]
	if ru == nil {
		return false
	}
	delete(r.runs, pid.Id)
	r.settleRun(ru, "")
	hand(r.cfg.Log, ru.reply, failedRun(ru.id, ru.pipeline, "pipeline run actor stopped unexpectedly"))
	return true
}

// stopRuns stops every run where it is: its task goes back to the queue at once, and
// the node that takes it resumes it at its stage.
func (r *Router) stopRuns() {
	for id, ru := range r.runs {
		delete(r.runs, id)
		r.c.Stop(ru.pid)
		r.settleRun(ru, "")
		hand(r.cfg.Log, ru.reply, failedRun(ru.id, ru.pipeline, ErrShuttingDown.Error()))
	}
}

// runsInProgress tells the queue the runs here are alive.
func (r *Router) runsInProgress() {
	for _, ru := range r.runs {
		if ru.task != nil {
			if err := ru.task.InProgress(); err != nil {
				r.cfg.Log.Warn("task in progress", "err", err)
			}
		}
	}
}

// yieldRuns asks each run to stop before its next stage (drain).
func (r *Router) yieldRuns() {
	for _, ru := range r.runs {
		r.c.Send(ru.pid, &pipeline.Yield{})
	}
}
