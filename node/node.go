package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/actors/router"
	"github.com/agentmux/agentmux/actors/supervisor"
	"github.com/agentmux/agentmux/attach"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/decide"
	"github.com/agentmux/agentmux/internal/dispatch"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/notify"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

const (
	ctlTimeout          = 5 * time.Second
	defaultStopTimeout  = 30 * time.Second
	auditFlushTimeout   = 5 * time.Second
	supervisorStopWait  = 5 * time.Second
	metricsDisabledAddr = "-"
	// mailboxWorkers per core run the agents' mailboxes; a Receive never blocks, so a
	// few per core keep every core's mailboxes off fresh goroutines.
	mailboxWorkers = 4
	// mailboxThroughput is protoactor's default: messages a mailbox handles before it
	// yields.
	mailboxThroughput = 300
)

// ErrNotReady is what /readyz reports while the node cannot take work.
var ErrNotReady = errors.New("node: not ready")

// Options configure a Node.
type Options struct {
	Manifest *config.Manifest
	Name     string // node name in subjects and audit; default: host name and a short id
	Log      *slog.Logger
	// Ephemeral runs the embedded NATS server on a free port with a temporary store, so
	// `run`, `demo` and tests never collide with a node that is up.
	Ephemeral bool
	// NoSupervisors leaves the manifest's supervisors to other nodes; Supervisors, when
	// set, names the only ones this node serves.
	NoSupervisors bool
	Supervisors   []string
	// NoHosts leaves every host to other nodes; Hosts, when set, names the only ones
	// this node runs. Routes naming hosts a node does not run are fine.
	NoHosts bool
	Hosts   []string
	// NoTasks leaves the work queue alone (run and demo submit locally).
	NoTasks bool
	// MetricsAddr overrides [metrics] addr; "-" serves no metrics.
	MetricsAddr string
	// WriteTimeout bounds each write to an agent's stdin (default 10s): an agent that
	// stops reading fails its session instead of blocking the runtime.
	WriteTimeout time.Duration
	// InProc runs the agents of the named hosts inside this process instead of their
	// commands: the load generator's "inproc" agents.
	InProc map[string]InProc
	// StateDir is where the node writes the local operator's credential for the CLI on
	// this machine, when its embedded server has no [[nats.users]] (see StateDir and
	// LocalCredentials); empty: it writes none, and only the node gets in.
	StateDir string
	// ClockOffset moves the node's wall clock, as other machines see it: the times it
	// writes in heartbeats and asks. Tests set it (`agentmux up` reads
	// AGENTMUX_TEST_CLOCK_OFFSET) to show that nodes whose clocks disagree still work
	// together; nothing compares one node's clock with another's.
	ClockOffset time.Duration
	// Getenv reads the passwords and keys the manifest names: its notifiers' secrets, its
	// connections' keys for the model gateway (default os.Getenv).
	Getenv func(string) string
	// Tracing makes the node's spans; nil: as the OTEL_EXPORTER_OTLP_* variables say
	// (tracing.FromEnv), off when they name no collector.
	Tracing *tracing.Provider
}

// Node is one running agentmux node.
type Node struct {
	Name    string
	Bus     *bus.Bus
	Metrics *metrics.Set

	log    *slog.Logger
	conf   conf         // what the node runs by, replaced by a reload
	engine engine       // the actor system, the workers of its mailboxes, the goroutines owned
	table  serviceTable // the node's services (services.go), started in order

	// The services' own state, each in the file of its service.
	audit      *auditor
	asking     asking      // the node's asks to supervisors (asker.go)
	control    control     // the control subjects served, and people's requests
	sandboxes  confinement // the programs the node starts: sandboxes, process groups (sandbox.go)
	workspaces workspaces  // the hosts' workspaces and the conflict radar (workspaces.go)
	standing   standing    // people's answers for a session or a host (grants.go)
	promotions promotions  // the shadows promoted fleet-wide (promote.go)
	pauses     pauses      // the fleet's paused sessions (paused.go)
	deciders   deciders    // this node's members of supervisors, and its notifiers
	sessions   sessions    // the router and what runs sessions with it
	pulse      pulse       // the heartbeat and the metrics server (heartbeat.go)
}

// conf is what a node runs by: its options, with the manifest of its last reload,
// and its share of that manifest (roles), which a reload replaces; and what was fixed
// when it started.
type conf struct {
	opts Options
	// rolesMu guards roles against the goroutines that read them (heartbeat, sweeps)
	// while a reload replaces them.
	rolesMu     sync.RWMutex
	roles       roles
	reloads     reloads // one at a time (reload.go)
	started     time.Time
	clockOffset time.Duration // Options.ClockOffset
	replicas    int           // of each stream and bucket
}

// engine runs the node's actors: the actor system, the workers that run their
// mailboxes (stopped after the system), and the goroutines the actors start off
// themselves (decisions, keep-alives, task acks, pullers, store I/O) and the node's
// own, stopped once the actors have.
type engine struct {
	system   *actor.ActorSystem
	workers  *dispatch.Pool
	routines *routines.Group
	events   *eventstream.Subscription
}

// control is what the control subjects need: their subscriptions, and the store of
// people's requests that `agentmux respond` answers through, once open.
type control struct {
	subs    []*nats.Subscription
	pending atomic.Pointer[store.PendingStore]
}

// Start builds and starts a node: its services (services.go) in their table's order,
// from the metrics server and the bus to the router, control subjects and heartbeat.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = subjectToken(host) + "-" + nuid.Next()[:6]
	}
	if subjectToken(opts.Name) != opts.Name {
		return nil, fmt.Errorf("node: name %q may only hold letters, digits, '_' and '-': it is a token of NATS subjects", opts.Name)
	}
	roles, err := chooseRoles(opts)
	if err != nil {
		return nil, err
	}
	if opts.Tracing == nil {
		if opts.Tracing, err = tracing.FromEnv(ctx, "agentmux", opts.Name); err != nil {
			return nil, err
		}
	}
	if opts.Tracing.On() {
		opts.Log = slog.New(tracing.LogHandler(opts.Log.Handler())) // lines about a session or request join its trace
	}
	n := &Node{Name: opts.Name, Metrics: metrics.New(), log: opts.Log,
		conf:     conf{opts: opts, roles: roles, started: time.Now(), clockOffset: opts.ClockOffset},
		engine:   engine{routines: routines.New()},
		sessions: sessions{stopped: make(chan struct{}), late: agent.NewLate()}}
	n.table.rows = n.services(opts)
	if err := n.startServices(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Node) startMetrics(opts Options) error {
	addr := opts.Manifest.Metrics.Addr
	if opts.MetricsAddr != "" {
		addr = opts.MetricsAddr
	}
	if addr == metricsDisabledAddr {
		return nil
	}
	token, err := metricsToken(opts, addr)
	if err != nil {
		return err
	}
	srv, err := metrics.Serve(addr, token, n.Metrics, n.Ready, n.log)
	if err != nil {
		return err
	}
	n.pulse.metrics = srv
	return nil
}

func (n *Node) startActorSystem() {
	n.engine.workers = dispatch.New(mailboxWorkers*runtime.GOMAXPROCS(0), mailboxThroughput)
	n.engine.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(levelHandler{min: slog.LevelError, Handler: n.log.Handler()}).With("lib", "protoactor")
	}))
	n.engine.events = n.engine.system.EventStream.Subscribe(func(evt any) {
		switch e := evt.(type) {
		case *actor.DeadLetterEvent:
			n.Metrics.DeadLetters.Inc()
		case *actor.SupervisorEvent:
			n.Metrics.ActorFailures.WithLabelValues(strings.TrimSuffix(strings.ToLower(e.Directive.String()), "directive")).Inc()
		}
	})
}

// stopActorSystem stops the actors left and the workers that ran their mailboxes.
func (n *Node) stopActorSystem() {
	n.engine.system.EventStream.Unsubscribe(n.engine.events)
	n.engine.system.Shutdown()
	n.engine.workers.Stop()
}

// startSupervisors spawns a member of each supervisor this node serves.
func (n *Node) startSupervisors(ctx context.Context, m *config.Manifest) error {
	if len(n.conf.roles.supervisors) == 0 {
		return nil
	}
	b := n.Bus
	pending, err := store.OpenPending(ctx, b.JS, b.Conn)
	if err != nil {
		return err
	}
	pending.KeepGrants(n.standing.grants) // its deliveries store what people gave for a session or a host
	memory, err := store.OpenMemory(ctx, b.JS)
	if err != nil {
		return err
	}
	deps := decide.Deps{Manifest: m, Pending: pending, Memory: memory, ServedTool: servedTool(b.Conn), Observe: observeLLM(n.Metrics, m.Pricing), Log: n.log,
		Procs: n.sandboxes.procs, Sandboxes: n.sandboxes.set, Tracer: n.tracer()}
	for _, s := range n.conf.roles.supervisors {
		d, err := decide.New(s, deps)
		if err != nil {
			return err
		}
		pid := n.engine.system.Root.Spawn(supervisor.Props(supervisor.Config{Supervisor: s, Decider: d, Conn: b.Conn, Member: n.Name,
			Pending: pending, Routines: n.engine.routines, Metrics: n.Metrics, Log: n.log, Tracer: n.tracer()}))
		n.deciders.supervisors = append(n.deciders.supervisors, pid)
	}
	// The queue subscriptions must reach the server before any agent asks.
	if err := b.Conn.FlushTimeout(5 * time.Second); err != nil {
		n.log.Warn("flush supervisor subscriptions", "err", err)
	}
	return nil
}

// startNotifiers sends the manifest's [notify.X] events to their webhooks; every node
// runs each in one queue group, so the fleet sends an event once.
func (n *Node) startNotifiers(opts Options) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, cfg := range opts.Manifest.Notify {
		x, err := notify.Start(notify.Config{Notify: cfg, Conn: n.Bus.Conn, Getenv: getenv, Metrics: n.Metrics, Log: n.log})
		if err != nil {
			n.stopNotifiers()
			return err
		}
		n.deciders.notifiers = append(n.deciders.notifiers, x)
	}
	return nil
}

// stopSupervisors stops this node's members of its supervisors.
func (n *Node) stopSupervisors() {
	for _, pid := range n.deciders.supervisors {
		n.stopSupervisor(pid)
	}
}

func (n *Node) stopNotifiers() {
	stopAll(n.deciders.notifiers)
	n.deciders.notifiers = nil
}

// serveRespond takes people's answers (agentmux respond) on this node too.
func (n *Node) serveRespond(ctx context.Context) error {
	pending, err := store.OpenPending(ctx, n.Bus.JS, n.Bus.Conn)
	if err != nil {
		return err
	}
	pending.KeepGrants(n.standing.grants)
	sub, err := store.ServeRespond(n.Bus.Conn, pending, n.log)
	if err != nil {
		return err
	}
	n.control.pending.Store(pending)
	n.control.subs = append(n.control.subs, sub)
	return nil
}

func (n *Node) startRouter(ctx context.Context, opts Options) error {
	env := agent.NewEnv(agent.Env{Node: n.Name, Conn: n.Bus.Conn, Asker: n.asking.asker, Metrics: n.Metrics, Log: n.log, Audit: n.audit.record,
		Late: n.sessions.late, Grants: n.standing.grants, Procs: n.sandboxes.procs, Tracer: n.tracer(), Dispatcher: n.engine.workers, Routines: n.engine.routines, WriteTimeout: opts.WriteTimeout,
		Gateway: n.sessions.models, Record: opts.Manifest.Gateway.Record, Exchange: n.audit.exchange,
		Checkpoints: n.sessions.checkpoints, MaxCheckpointBytes: opts.Manifest.Checkpoints.MaxCheckpointBytes})
	rcfg := router.Config{Env: env, Manifest: opts.Manifest, Hosts: n.conf.roles.hosts, Stopped: n.sessions.stopped,
		InProc: n.attachSources(opts), Sandboxes: n.sandboxes.set, Workspaces: n.workspaceProviders(), Radar: n.workspaces.radar,
		Paused: n.pauses.store}
	rcfg.SessionEnded = func(ctx context.Context, session string) {
		if n.standing.grants == nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, ctlTimeout)
		defer cancel()
		if err := n.standing.grants.EndSession(ctx, session); err != nil {
			n.log.Warn("a session ended, and its session grants are still listed; they expire within a day", "session", session, "err", err)
		}
	}
	if n.sessions.attached != nil {
		// Attached sessions run nothing between their agents' requests: a drain hands
		// them to other nodes at once rather than wait out its grace for them.
		rcfg.Draining, rcfg.Undrained = n.sessions.attached.Drain, n.sessions.attached.Undrain
	}
	spend, err := store.OpenSpend(ctx, n.Bus.JS)
	if err != nil {
		return err
	}
	rcfg.Spend = spend
	n.sessions.daily = n.dailyGate(spend, opts.Manifest)
	rcfg.Daily = n.sessions.daily
	if err := n.serveBudgetRaises(spend); err != nil {
		return err
	}
	if len(opts.Manifest.Pipelines) > 0 {
		runs, err := store.OpenPipelines(ctx, n.Bus.JS)
		if err != nil {
			return err
		}
		rcfg.Pipelines = runs
	}
	if !opts.NoTasks {
		intake, err := router.NewIntake(ctx, n.Bus.JS, rcfg)
		if err != nil {
			return err
		}
		rcfg.JS, rcfg.Intake = n.Bus.JS, intake
	}
	// The router starts with the promotions standing; each later one reaches it.
	n.promotions.mu.Lock()
	rcfg.Promoted = n.promotions.standing
	n.sessions.router = n.engine.system.Root.Spawn(router.Props(rcfg))
	n.promotions.mu.Unlock()
	if n.sessions.attached != nil {
		if err := n.sessions.attached.Start(); err != nil {
			return err
		}
	}
	return nil
}

// attachSources makes the hub of the attached sources this node runs, and their
// in-process agents beside opts' own; nil without any.
func (n *Node) attachSources(opts Options) map[string]agent.InProc {
	sources := map[string]*config.Host{}
	for name, h := range n.conf.roles.hosts {
		if h.Attached != nil {
			sources[name] = h
		}
	}
	if len(sources) == 0 {
		return opts.InProc
	}
	holders, err := store.OpenHolders(context.Background(), n.Bus.JS)
	if err != nil {
		n.log.Warn("attached sessions are not recorded by node: with several nodes running a source, a session's requests may open it on each", "err", err)
		holders = nil
	}
	n.sessions.attached = attach.New(attach.Config{Conn: n.Bus.Conn, JS: n.Bus.JS, Holders: holders, Node: n.Name, Sources: sources, Log: n.log, Routines: n.engine.routines,
		Submit: func(host, session, prompt, by string, attempt int) {
			n.engine.system.Root.Send(n.sessions.router, &router.Submit{Host: host, Start: &agent.StartSession{Session: session, Prompt: prompt,
				By: by, Attempt: attempt, Started: time.Now()}})
		}})
	inproc := maps.Clone(opts.InProc)
	if inproc == nil {
		inproc = map[string]agent.InProc{}
	}
	for name := range sources {
		inproc[name] = n.sessions.attached.Agent(name)
	}
	return inproc
}

// RunPipeline runs a pipeline on this node, which must run each of its stages' hosts;
// the channel receives the run once it ends. An empty id is a fresh one.
func (n *Node) RunPipeline(name, id string, params map[string]string) (string, <-chan *wire.PipelineRun) {
	if id == "" {
		id = "p-" + nuid.Next()
	}
	reply := make(chan *wire.PipelineRun, 1)
	n.engine.system.Root.Send(n.sessions.router, &router.RunPipeline{Pipeline: name, ID: id, Params: params, Reply: reply})
	return id, reply
}

// Ready reports whether the node can take work: NATS connected, started to the end
// (its first heartbeat written, so `agentmux nodes` lists it), and not draining (as of
// its last heartbeat).
func (n *Node) Ready() error {
	if n.Bus == nil || n.Bus.Conn == nil {
		return fmt.Errorf("%w: starting", ErrNotReady)
	}
	if st := n.Bus.Conn.Status(); st != nats.CONNECTED {
		return fmt.Errorf("%w: NATS connection is %v", ErrNotReady, st)
	}
	if !n.pulse.listed.Load() {
		return fmt.Errorf("%w: starting (no heartbeat written yet)", ErrNotReady)
	}
	if n.pulse.draining.Load() {
		return fmt.Errorf("%w: draining", ErrNotReady)
	}
	return nil
}

// MetricsAddr is where the metrics server listens, or "" without one.
func (n *Node) MetricsAddr() string {
	if n.pulse.metrics == nil {
		return ""
	}
	return n.pulse.metrics.Addr()
}

// Result is what a session came to, as its agent reports it.
type Result = agent.Result

// RequestRecord is how one request of a session ended (Result.Requests).
type RequestRecord = agent.RequestRecord

// InProc is an agent run inside the node's process (Options.InProc): it reads the
// runtime's lines from stdin and writes its own to stdout, as a process would.
type InProc = agent.InProc

// Session is a session to start on a host.
type Session struct {
	ID     string // empty: a fresh one
	Prompt string
	// Resume continues an earlier conversation of the agent (an id, or "last"), for
	// dialects that can.
	Resume string
}

// Submit starts a session on host; reply (buffered, capacity ≥ 1) gets its Result.
// An empty session id gets a fresh one, returned.
func (n *Node) Submit(host, session, prompt string, reply chan<- *Result) string {
	return n.SubmitSession(host, Session{ID: session, Prompt: prompt}, reply)
}

// SubmitSession starts session s on host; reply (buffered, capacity ≥ 1) gets its
// Result. It returns the session's id.
func (n *Node) SubmitSession(host string, s Session, reply chan<- *Result) string {
	if s.ID == "" {
		s.ID = wire.NewSessionID()
	}
	start := &agent.StartSession{Session: s.ID, Prompt: s.Prompt, Resume: s.Resume, Reply: reply, Started: time.Now()}
	n.engine.system.Root.Send(n.sessions.router, &router.Submit{Host: host, Start: start})
	return s.ID
}

// Run runs one session and waits for its result.
func (n *Node) Run(ctx context.Context, host, session, prompt string) (*Result, error) {
	reply := make(chan *Result, 1)
	n.Submit(host, session, prompt, reply)
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Drain stops taking tasks, hands queued ones back, lets running sessions finish
// within grace (or, with handover, hands each to another node at its next checkpoint)
// and then hands the rest back (see router.Drain); it returns when no session is left
// here, or ctx ends. Stop the node afterwards.
func (n *Node) Drain(ctx context.Context, grace time.Duration, handover bool) error {
	n.pulse.draining.Store(true)
	res, err := n.engine.system.Root.RequestFuture(n.sessions.router, &router.Drain{Grace: grace, Handover: handover}, ctlTimeout).Result()
	if err != nil {
		return fmt.Errorf("node: drain: the router did not answer: %w", err)
	}
	if r, ok := res.(*wire.DrainReply); ok {
		n.log.Info("draining", "effect", r.Effect)
	}
	select {
	case <-n.sessions.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node: sessions still running when the drain's wait ended: %w", ctx.Err())
	}
}

// Stop shuts the node down in order; it waits for processes up to ctx's deadline (or
// 30 s). It is idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.table.stopping.once.Do(func() { n.table.stopping.err = n.stop(ctx) })
	return n.table.stopping.err
}

func (n *Node) stop(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStopTimeout)
		defer cancel()
	}
	return n.stopServices(ctx)
}

// tracer makes the node's spans; nil when it traces nothing, so that nothing is spent
// on spans that go nowhere.
func (n *Node) tracer() trace.Tracer {
	if !n.conf.opts.Tracing.On() {
		return nil
	}
	return n.conf.opts.Tracing.Tracer()
}

// stopRoutines stops the actors' goroutines, which end once their contexts are
// cancelled (a command supervisor's process group is killed then), and refuses new
// ones.
func (n *Node) stopRoutines(ctx context.Context) {
	if err := n.engine.routines.Stop(ctx); err != nil {
		n.log.Warn("goroutines still running at the stop deadline", "err", err)
	}
}

// levelHandler drops records below min; protoactor is chatty at info level.
type levelHandler struct {
	slog.Handler
	min slog.Level
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// HostName is this machine's host name as a node name: what `agentmux up` calls its
// node unless --name says otherwise, so that a node restarted is the same node, with
// the same store and the same entry in `agentmux nodes`.
func HostName() string {
	host, _ := os.Hostname()
	return subjectToken(host)
}

func subjectToken(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			out[i] = '-'
		}
	}
	if len(out) == 0 {
		return "node"
	}
	return string(out)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}

// servedTool calls a tool served by another process on agentmux.tool.<name>: the
// request is the decide.ToolCall, the reply the tool's result as JSON.
func servedTool(nc *nats.Conn) func(ctx context.Context, tool string, call json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, tool string, call json.RawMessage) (json.RawMessage, error) {
		m, err := nc.RequestWithContext(ctx, wire.ToolSubject(tool), call)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("tool %q: nothing serves %s; start its server or give the tool a command", tool, wire.ToolSubject(tool))
		}
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", tool, err)
		}
		return m.Data, nil
	}
}

// observeLLM counts each model call of the node's llm supervisors, and what it cost
// when pricing prices its model.
func observeLLM(m *metrics.Set, pricing config.Pricing) decide.LLMObserver {
	return func(c decide.LLMCall) {
		m.LLMRequests.WithLabelValues(c.Supervisor, c.Outcome).Inc()
		m.LLMSeconds.WithLabelValues(c.Supervisor).Observe(c.Took.Seconds())
		m.LLMTokens.WithLabelValues(c.Supervisor, "input").Add(float64(c.InputTokens))
		m.LLMTokens.WithLabelValues(c.Supervisor, "output").Add(float64(c.OutputTokens))
		if usd, ok := pricing.Cost(c.Model, &protocol.Usage{Input: c.InputTokens, Output: c.OutputTokens}); ok {
			m.LLMCost.WithLabelValues(c.Supervisor, c.Model).Add(usd)
		}
	}
}
