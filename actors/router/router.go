package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/actors/pipeline"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/actorio"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// ErrShuttingDown ends sessions submitted or queued while the node stops.
var ErrShuttingDown = errors.New("router: runtime shutting down")

// A task is delivered again when its node has not said "in progress" for taskAckWait:
// a node that died is noticed, and its tasks handed to another, within that time.
const (
	taskAckWait      = 10 * time.Second
	taskProgressTick = 3 * time.Second
	taskFetchWait    = time.Second
	// A finished task's ack is confirmed by the server, tried again for this long.
	taskAckTimeout   = 30 * time.Second
	taskAckTry       = 2 * time.Second
	taskAckRetryWait = 250 * time.Millisecond
	retryWaitMax     = 2 * time.Second // the longest wait of the router's retries
	// A task delivered again reads its earlier attempts from the audit within this.
	auditReadTimeout = 5 * time.Second
	// endedMemory is how long a node remembers a task that ended here, to acknowledge
	// rather than run a delivery of it that crossed the acknowledgement.
	endedMemory    = 10 * time.Minute
	auditRetryWait = 250 * time.Millisecond
	// spendTimeout bounds adding an ended session's spend to its host's daily total.
	spendTimeout = 10 * time.Second
)

// Config is what a Router needs: what every agent of its node shares (its Dispatcher
// runs the router's mailbox too), and the node's hosts and intake.
type Config struct {
	*agent.Env
	Manifest *config.Manifest
	// Promoted are the shadows promoted fleet-wide, at the start (then Promotions).
	Promoted map[string]bool
	// Hosts are the hosts this node runs; nil: every host of the manifest.
	Hosts map[string]*config.Host
	JS    jetstream.JetStream // nil: no work-queue intake
	// Intake is where the router pulls queued tasks and pipeline runs (NewIntake); nil
	// with JS nil.
	Intake *Intake
	// InProc runs the agents of the named hosts inside this process (load generation).
	InProc map[string]agent.InProc
	// Sandboxes confine the agents, by "hosts.<name>" (agent.Config.Sandbox).
	Sandboxes sandbox.Set
	// Workspaces give each session of the hosts they name a workspace of its own
	// (agent.Config.Workspace); a host without one works in its working_dir.
	Workspaces map[string]*workspace.Provider
	// Radar is the node's conflict radar (agent.Config.Radar).
	Radar *workspace.Radar
	// Stopped is closed when a Shutdown has completed: every process is gone.
	Stopped chan struct{}
	// SessionEnded, when set, is called off the router's mailbox (through Routines)
	// with each session that ended for good here: its session grants go.
	SessionEnded func(ctx context.Context, session string)
	// Draining and Undrained, when set, are called from the router's mailbox as a drain
	// begins and when it is undone; they must not block.
	Draining, Undrained func()
	// Pipelines keeps pipeline runs; nil: this node runs no pipelines.
	Pipelines *store.PipelineStore
	// Spend keeps the fleet's daily spend by host; nil: not kept (no JetStream).
	Spend *store.SpendStore
	// Daily holds a host's queued tasks while it is over its daily budget; nil: no
	// daily budget.
	Daily Gate
	// Paused keeps the fleet's paused sessions; nil: not kept (no JetStream).
	Paused *store.Paused
}

// Submit runs a session on a host. Start.Reply receives the final Result.
type Submit struct {
	Host  string
	Start *agent.StartSession
}

// Shutdown stops intake, ends every session and stops every process.
type Shutdown struct{ Reason string }

type (
	taskArrived struct {
		host string
		msg  jetstream.Msg
	}
	taskResumed struct {
		s        *session
		records  []*wire.AuditRecord
		err      error
		restored *agent.Restored // nil: no checkpoint to go on from
		paused   pauseVerdict    // whether a paused session's task runs (paused.go)
	}
	progressTick struct{}
	// retryRestored is a session to run again, with its latest checkpoint read.
	retryRestored struct {
		p        *pool
		s        *session
		res      *agent.Result // how the attempt before failed
		restored *agent.Restored
	}
)

// Props returns the props of a Router.
func Props(cfg Config) *actor.Props {
	cfg.Env = cfg.Env.Defaulted()
	opts := []actor.PropsOption{actor.WithSupervisor(actor.NewOneForOneStrategy(0, time.Second, func(reason any) actor.Directive {
		cfg.Log.Error("agent actor failed; stopping it", "reason", reason)
		return actor.StopDirective
	}))}
	if cfg.Dispatcher != nil {
		// The router's mailbox runs where its agents' do: on a fresh goroutine each
		// time, it would grow a new stack on the way down every spawn and session end.
		opts = append(opts, actor.WithDispatcher(cfg.Dispatcher))
	}
	return actor.PropsFromProducer(func() actor.Actor { return newRouter(cfg) }, opts...)
}

// Router is the node's session router.
type Router struct {
	cfg      Config
	pools    map[string]*pool
	c        actor.Context
	ctx      context.Context          // the pullers' and the ticker's; ends with cancel
	cancel   context.CancelFunc       // stops pullers and the progress ticker
	drains   int                      // drains begun: a drainOver of an earlier one is stale
	stopPull context.CancelFunc       // stops the pullers only (drain)
	phase    phase                    // lifecycle.go
	runs     map[string]*run          // pipeline runs, by their actor's PID id
	runSlots map[string]chan struct{} // per pipeline: held by the puller per run in flight
	dir      string                   // the node's working directory, where agents start by default
}

// session is a session the router is responsible for until its final Result.
type session struct {
	start   *agent.StartSession
	host    string
	task    jetstream.Msg // nil for local submissions
	started bool          // session.started published
	// cancelled is the error of a session cancelled while it ran: it ends with it, and
	// is not retried (cancel.go).
	cancelled string
	// usage is what the session's attempts so far cost, as the agent reported it.
	usage wire.Tally
	// unpaused: its task is the copy `agentmux resume` queued of a paused session's,
	// whose entry it removes once it has ended (paused.go).
	unpaused bool
}

func newRouter(cfg Config) *Router {
	r := &Router{cfg: cfg, pools: map[string]*pool{}, runs: map[string]*run{}, runSlots: map[string]chan struct{}{}}
	r.dir, _ = os.Getwd() // once: each agent's start would otherwise stat the directory twice
	for name, h := range hostsOf(cfg) {
		r.pools[name] = newPool(h)
	}
	return r
}

// Receive implements actor.Actor. It never blocks.
func (r *Router) Receive(c actor.Context) {
	r.c = c
	switch m := c.Message().(type) {
	case *actor.Started:
		r.start(c)
	case *Submit:
		r.submit(m)
	case *taskArrived:
		if _, ok := r.runSlots[m.host]; ok {
			r.onPipelineTask(m)
		} else {
			r.onTask(m)
		}
	case *taskResumed:
		r.onTaskResumed(m)
	case *retryRestored:
		r.onRetryRestored(m)
	case *RunPipeline:
		r.runPipeline(m)
	case *pipeline.RunStage:
		r.submit(&Submit{Host: m.Host, Start: m.Start}) // Start.Notify is the run
	case *pipeline.Ended:
		r.onRunEnded(m)
	case *agent.SessionEnded:
		r.onSessionEnded(m)
	case *agent.AgentExited:
		r.onAgentGone(m.PID, true)
		c.Stop(m.PID)
	case *actor.Terminated:
		if !r.onRunGone(m.Who) {
			r.onAgentGone(m.Who, false)
		}
	case *progressTick:
		r.onProgressTick()
	case *Shutdown:
		r.shutdown(m.Reason)
	case *Reload:
		r.reload(m)
	case *Promotions:
		r.promote(m)
	case *Drain:
		c.Respond(r.drain(m))
	case *Undrain:
		c.Respond(r.undrain())
	case *drainOver:
		if r.phase == phaseDraining && m.drain == r.drains {
			r.shutdown(fmt.Sprintf("drained: the grace of %v is over; the rest go back to the queue", m.grace))
		}
	case *listRequest:
		c.Respond(r.list())
	case *StatsRequest:
		c.Respond(r.stats())
	case *ctlSession:
		if reply := r.ctlSession(m); reply != nil {
			c.Respond(reply) // nil: the agent answers
		}
	case *actor.Stopping:
		if r.cancel != nil {
			r.cancel()
		}
	}
}

func (r *Router) start(c actor.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.cancel = ctx, cancel
	if r.cfg.Intake != nil {
		r.startIntake(c)
		system, self := c.ActorSystem(), c.Self()
		r.cfg.Routines.Go(func(context.Context) { tick(ctx, system, self) })
	}
}

// startIntake starts pulling tasks and pipeline runs, each host and pipeline as many at
// once as it has room for, until a drain or a shutdown (stopPull).
func (r *Router) startIntake(c actor.Context) {
	pullCtx, stopPull := context.WithCancel(r.ctx)
	r.stopPull = stopPull
	for name, cons := range r.cfg.Intake.Hosts {
		system, self, slots, gate := c.ActorSystem(), c.Self(), r.pools[name].slots, r.cfg.Daily
		r.cfg.Routines.Go(func(context.Context) { pull(pullCtx, system, self, name, cons, slots, gate, r.cfg.Log) })
		r.cfg.Metrics.TaskIntake.WithLabelValues(name).Set(1)
	}
	r.startPipelines(pullCtx, c)
}

// taskConsumer is the durable consumer a node pulls name's tasks (a host's, or a
// pipeline's runs) with: a task not said "in progress" for taskAckWait goes to another.
func taskConsumer(durable, name string) jetstream.ConsumerConfig {
	// No cap on tasks taken and not yet acked: every node pulls only what it has free
	// slots for, and the server's default (1,000 for the whole fleet) would cap every
	// host at a thousand sessions at once however many nodes run it.
	return jetstream.ConsumerConfig{Durable: durable, FilterSubjects: wire.TaskQueue(name),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: taskAckWait, MaxDeliver: -1, MaxAckPending: -1}
}

// Gate says when a host may take another task from the queue (store.DailyGate).
type Gate interface {
	// Wait returns once host may; an error once ctx is done.
	Wait(ctx context.Context, host string) error
	// Limit is the budget it holds hosts at; 0: none.
	Limit() float64
}

// pull fetches one task per free slot, when the gate lets it, and hands it to the
// router.
func pull(ctx context.Context, system *actor.ActorSystem, self *actor.PID, host string, cons jetstream.Consumer, slots chan struct{}, gate Gate, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		for {
			// Asked again before each fetch: a fetch waits a second at most, so a slot
			// that waited for a task does not take one past the host's daily budget.
			if gate != nil && gate.Wait(ctx, host) != nil {
				freeSlot(slots)
				return
			}
			fetchCtx, cancel := context.WithTimeout(ctx, taskFetchWait)
			msg, err := cons.Next(jetstream.FetchContext(fetchCtx))
			cancel()
			if ctx.Err() != nil {
				if err == nil {
					_ = msg.Nak() // taken as the intake stopped: back to the queue at once
				}
				freeSlot(slots) // the slot taken for it, which no task holds
				return
			}
			if err != nil {
				if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
					log.Warn("fetch task", "host", host, "err", err)
					select {
					case <-ctx.Done():
						freeSlot(slots)
						return
					case <-time.After(taskFetchWait):
					}
				}
				continue
			}
			if gate != nil && gate.Limit() > 0 && keepWhileHeld(ctx, gate, host, msg) != nil {
				_ = msg.Nak() // the intake stopped while it was held: back to the queue
				freeSlot(slots)
				return
			}
			system.Root.Send(self, &taskArrived{host: host, msg: msg})
			break
		}
	}
}

// keepWhileHeld asks the gate again once a task is fetched: the fetch waited up to
// taskFetchWait, in which the host may have reached its daily budget. A task fetched
// then is kept, said in progress so the queue gives it to no other node, until the gate
// lets the host go (an error once ctx is done).
func keepWhileHeld(ctx context.Context, gate Gate, host string, msg jetstream.Msg) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(taskProgressTick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return gate.Wait(ctx, host)
}

func tick(ctx context.Context, system *actor.ActorSystem, self *actor.PID) {
	t := time.NewTicker(taskProgressTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			system.Root.Send(self, &progressTick{})
		}
	}
}

// taskTrace is the trace context a task's client sent in its headers, which its
// session's span (a pipeline run's) joins; nil without one.
func taskTrace(msg jetstream.Msg) context.Context {
	h := msg.Headers()
	if h.Get("traceparent") == "" {
		return nil
	}
	return tracing.FromHeader(context.Background(), h)
}

func (r *Router) onTask(m *taskArrived) {
	p := r.pools[m.host]
	var task wire.Task
	err := json.Unmarshal(m.msg.Data(), &task)
	if err == nil && task.ID != "" {
		err = wire.CheckTaskID(task.ID) // an id no subject can carry is refused, not replaced
	}
	if err != nil || task.Prompt == "" {
		r.cfg.Log.Error("task is not a JSON {id, host, prompt} with an id of letters, digits, '_' and '-'; refused and dropped", "subject", m.msg.Subject(), "err", err)
		r.cfg.Metrics.Tasks.WithLabelValues(m.host, "invalid").Inc()
		if err := m.msg.Term(); err != nil {
			r.cfg.Log.Warn("terminate task", "err", err)
		}
		r.release(p)
		return
	}
	if !r.taking() {
		r.nak(m.msg)
		r.release(p)
		return
	}
	if r.forAnother(&task, m.msg, time.Now()) {
		r.nakFor(m.msg, aimRecheck)
		r.release(p)
		return
	}
	id := task.ID
	if id == "" {
		id = wire.NewSessionID()
	}
	if p.runsHere(id) { // delivered again while it still runs here
		if err := m.msg.InProgress(); err != nil {
			r.cfg.Log.Warn("task in progress", "err", err)
		}
		r.release(p)
		return
	}
	by, claimed := queuedBy(m.msg.Subject(), task.By)
	s := &session{host: m.host, task: m.msg, start: &agent.StartSession{Session: id, Task: task.ID, Requeue: true, Prompt: task.Prompt,
		Resume: task.Resume, By: by, ClaimedBy: claimed, Attempt: task.Attempt + firstAttempt(m.msg, p.host.Retries), Started: time.Now(), Trace: taskTrace(m.msg)}}
	if s.start.Attempt == 0 {
		r.enqueue(p, s)
		return
	}
	if task.Attempt == 0 && p.endedHere(id) { // one resumed by hand goes on after its end
		r.alreadyEnded(p, m.msg, id, "here")
		return
	}
	// Delivered again: its node died or handed it back, its pause is over, or it was
	// resumed by hand. Its earlier attempts' answers, from the audit, go with it, so
	// nobody is asked the same thing twice, and it goes on from its latest checkpoint,
	// if it has one (unless it starts afresh).
	p.hold(id)
	host, fresh := p.host, task.Fresh
	s.unpaused = task.Unpaused
	actorio.Do(r.cfg.Routines, actorio.Self(r.c), auditReadTimeout, func(ctx context.Context) any {
		if v := r.pauseOver(ctx, id, m.msg, task.Unpaused); v != runs {
			return &taskResumed{s: s, paused: v}
		}
		records, err := r.readAudit(ctx, id)
		m := &taskResumed{s: s, records: records, err: err}
		if !fresh {
			m.restored = r.restorable(ctx, host, id)
		}
		return m
	})
}

// onTaskResumed queues a task delivered again, told of its earlier attempts.
func (r *Router) onTaskResumed(m *taskResumed) {
	p := r.pools[m.s.host]
	if m.paused != runs {
		p.leave(m.s.start.Session)
		r.pausedTask(m.s, m.paused)
		r.release(p)
		return
	}
	if !r.taking() {
		p.leave(m.s.start.Session)
		r.nak(m.s.task)
		r.release(p)
		return
	}
	if m.err != nil {
		r.cfg.Log.Warn("task delivered again; its earlier attempts could not be read from the audit, so it starts without them",
			"session", m.s.start.Session, "err", m.err)
	}
	if endedOK(m.records) {
		p.leave(m.s.start.Session)
		r.alreadyEnded(p, m.s.task, m.s.start.Session, "in the audit")
		return
	}
	m.s.start.Previous = wire.PreviousFromAudit(m.records, m.s.start.Attempt)
	m.s.start.Restored = m.restored
	r.enqueue(p, m.s)
}

// restorable is the latest checkpoint of session id of host h, with its agent's state,
// its transcript and its workspace, or nil: the host keeps none, the session took none, or it could not
// be read (said, and the session starts afresh, with its earlier attempts' answers).
func (r *Router) restorable(ctx context.Context, h *config.Host, id string) *agent.Restored {
	if r.cfg.Checkpoints == nil || !h.Checkpoint {
		return nil
	}
	c, err := r.cfg.Checkpoints.Find(ctx, id, 0)
	var parts map[string][]byte
	if err == nil {
		parts, err = r.cfg.Checkpoints.Parts(ctx, c)
	}
	switch {
	case errors.Is(err, store.ErrNoCheckpoint):
		return nil
	case err != nil:
		r.cfg.Log.Warn("a session delivered again has a checkpoint that could not be read; it starts afresh, with its earlier attempts' answers", "session", id, "err", err)
		return nil
	}
	return &agent.Restored{Why: "redelivered", Checkpoint: c, State: parts["state"], Transcript: parts["transcript"], Workspace: parts["workspace"]}
}

// alreadyEnded acknowledges a delivery of a task that has already ended ok (where
// says how the router knows): its acknowledgement crossed the delivery, and running
// it again would end it twice.
func (r *Router) alreadyEnded(p *pool, msg jetstream.Msg, id, where string) {
	r.cfg.Log.Info("task delivered again after it ended; acknowledged, not run again", "session", id, "ended", where)
	r.ack(msg, id)
	r.release(p)
}

// endedOK reports whether an attempt of the session the records are of ended ok.
func endedOK(records []*wire.AuditRecord) bool {
	for _, rec := range records {
		if rec.Kind == "session.ended" && rec.Outcome == "ok" {
			return true
		}
	}
	return false
}

// queuedBy is who asked for a task's session, as its subject vouches (what the bus let
// its publisher queue as), and who the task itself says asked, when that differs: a
// claim the audit keeps apart.
func queuedBy(subject, said string) (by, claimed string) {
	_, by, _ = wire.ParseTaskSubject(subject)
	if said != by {
		claimed = said
	}
	return by, claimed
}

// firstAttempt numbers the first attempt of a task's delivery so that attempts stay
// unique across nodes: each delivery has room for the host's retries.
func firstAttempt(msg jetstream.Msg, retries int) int {
	meta, err := msg.Metadata()
	if err != nil || meta.NumDelivered < 1 {
		return 0
	}
	return int(meta.NumDelivered-1) * (retries + 1)
}

func (r *Router) nak(msg jetstream.Msg) { r.nakFor(msg, 0) }

// nakFor returns a task to the queue, to be delivered again after delay (≤ 0: at once).
func (r *Router) nakFor(msg jetstream.Msg, delay time.Duration) {
	var err error
	if delay > 0 {
		err = msg.NakWithDelay(delay)
	} else {
		err = msg.Nak()
	}
	if err != nil {
		r.cfg.Log.Warn("return task to the queue", "err", err, "delay", delay)
	}
}

func (r *Router) release(p *pool) { freeSlot(p.slots) }

// freeSlot gives back a puller's slot, if one is held.
func freeSlot(slots chan struct{}) {
	select {
	case <-slots:
	default:
	}
}

func (r *Router) onProgressTick() {
	r.runsInProgress()
	now := time.Now()
	for _, p := range r.pools {
		p.forgetEnded(now.Add(-endedMemory))
		for _, s := range p.busy {
			if s.task != nil {
				if err := s.task.InProgress(); err != nil {
					r.cfg.Log.Warn("task in progress", "err", err)
				}
			}
		}
	}
}

func (r *Router) submit(m *Submit) {
	p := r.pools[m.Host]
	if m.Start.Started.IsZero() {
		m.Start.Started = time.Now()
	}
	if m.Start.Session == "" {
		m.Start.Session = wire.NewSessionID()
	}
	if p == nil || r.stopping() {
		text := "host '" + m.Host + "' does not run on this node"
		if r.stopping() {
			text = ErrShuttingDown.Error()
		}
		r.deliver(m.Start, &agent.Result{Session: m.Start.Session, Host: m.Host, Error: text})
		return
	}
	r.enqueue(p, &session{host: m.Host, start: m.Start})
}

func (r *Router) enqueue(p *pool, s *session) {
	r.cfg.Metrics.SessionsActive.WithLabelValues(p.host.Name).Inc()
	p.enqueue(s)
	r.dispatch(p)
}

// dispatch hands queued sessions to idle processes, spawning up to the pool size.
func (r *Router) dispatch(p *pool) {
	spawn := func() *actor.PID {
		if p.shared == nil {
			p.shared = agent.NewShared(p.host.Name, r.cfg.Metrics, r.cfg.Log)
		}
		return r.c.Spawn(agent.Props(agent.Config{Env: r.cfg.Env, Host: p.host, Shared: p.shared, Dir: r.dir,
			Routes: r.cfg.Manifest.Routes, Promoted: r.cfg.Promoted, InProc: r.cfg.InProc[p.host.Name],
			Sandbox: r.cfg.Sandboxes["hosts."+p.host.Name], Workspace: r.cfg.Workspaces[p.host.Name], Radar: r.cfg.Radar,
			Pricing: r.cfg.Manifest.Pricing, SessionUSD: r.cfg.Manifest.Budgets.SessionCeiling()}))
	}
	for !r.stopping() {
		pid, s := p.next(spawn)
		if s == nil {
			return
		}
		if !s.started {
			s.started = true
			r.lifecycleStarted(s)
		}
		r.c.Send(pid, s.start)
	}
}
