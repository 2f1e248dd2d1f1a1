package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/gateway"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// Defaults for Config fields left zero.
const (
	DefaultWriteTimeout = 10 * time.Second
	DefaultDrainDelay   = 500 * time.Millisecond
	termDelay           = 500 * time.Millisecond // stdin close → SIGTERM
)

// cutLine shortens s to at most n bytes, on a rune boundary, marking the cut.
func cutLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Grants are the answers people gave for a session or a host (store.Grants).
type Grants interface {
	// Find is the grant that answers a request of typ with text from session of host.
	Find(host, session, typ, text string, now time.Time) *wire.Grant
	// Revoked reports whether grant id was revoked.
	Revoked(id string) bool
}

// Config is what an Agent needs: what every agent of its node shares (Env), and what
// is its host's own.
type Config struct {
	*Env
	Host *config.Host
	// Shared is what the host's agents share (NewShared); nil: the agent makes its own.
	Shared *Shared
	// Dir is the node's own directory, where an agent without a workspace or a host
	// working_dir starts; "": the process's working directory, looked up at each start.
	Dir string
	// Routes send requests to supervisors; those whose shadow is in Promoted (read
	// only: shared by every agent), to their shadow instead (config.Route.Effective).
	Routes   config.Routes
	Promoted map[string]bool
	// InProc, when set, runs the agent in this process instead of the host's command.
	InProc InProc
	// Sandbox confines the agent's process (nil: unsandboxed).
	Sandbox *sandbox.Sandbox
	// Workspace gives each session a workspace of its own, where its process starts
	// (nil: the host's working_dir, shared).
	Workspace *workspace.Provider
	// Radar is the node's conflict radar: what other sessions touched of the files a
	// request would change goes with its ask (nil: none).
	Radar *workspace.Radar
	// Pricing prices the tokens of a session with a budget as it goes, where the agent
	// reports no cost.
	Pricing config.Pricing
	// SessionUSD is what a session whose budget sets no usd may spend before it is
	// paused ([budgets] session_usd); 0: no ceiling.
	SessionUSD float64
}

// Props returns the props that spawn an Agent for cfg.
func Props(cfg Config) *actor.Props {
	cfg.Env = cfg.Env.Defaulted()
	var opts []actor.PropsOption
	if cfg.Dispatcher != nil {
		opts = append(opts, actor.WithDispatcher(cfg.Dispatcher))
	}
	if cfg.Shared == nil {
		cfg.Shared = NewShared(cfg.Host.Name, cfg.Metrics, cfg.Log)
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Agent{cfg: cfg, host: cfg.Host, log: cfg.Shared.log, shared: cfg.Shared, stream: &stream{}}
	}, opts...)
}

// Agent is the actor for one agent process.
type Agent struct {
	cfg    Config
	host   *config.Host
	log    *slog.Logger
	shared *Shared // the host's metrics and logger
	system *actor.ActorSystem
	self   *actor.PID
	parent *actor.PID

	phase    phase // see lifecycle.go
	proc     *process
	caps     map[string]bool
	dialect  dialect.Dialect // nil: the native protocol
	served   int             // sessions started on this process
	exitErr  error
	reading  int  // stdout and stderr still being read to their end
	killed   bool // we signalled the group, so a death by signal is ours
	gen      uint64
	ladder   []*time.Timer                        // stop ladder and drain timers, stopped when the process is gone
	messages map[protocol.Type]prometheus.Counter // messages_total by type, looked up once
	scratch  []byte                               // an event being encoded; publishing copies it
	requests *time.Timer                          // the soonest request deadline (timers.go)
	asks     map[string]string                    // ask subjects by supervisor, made once
	wake     time.Time                            // when requests fires; zero: not armed
	readAt   time.Time                            // when the lines being handled were read; zero: none are

	stderrTail stderrTail // the end of stderr, for the error of a crash
	diedInInit bool       // the process exited while initializing: a waiting session says so

	waiting   *StartSession   // arrived before the process was ready
	waitTrace context.Context // the waiting session's span, begun before its process
	waitSpan  trace.Span
	// writing counts the checkpoints being written; finishing is the reason of a finish
	// that waits for them (afterWrites).
	writing   int
	finishing string
	// resuming is the conversation the waiting session's process starts resumed in,
	// from its checkpoint's transcript (sessionArgs); "" when it starts afresh.
	resuming  string
	sess      *session
	ws        *workspace.Workspace // the session's workspace (Config.Workspace); workspace.go
	wsSandbox *sandbox.Sandbox     // the session's own sandbox, walled from the host's other sessions
	wsState   wsState
	held      []*SessionEnded // the session's end, reported once its workspace is closed
	measure   *measurer       // measures the open workspace's size
	wsBytes   int64           // its size as last measured
	wsTouched map[string]bool // the touches published, by kind and path
	stream    *stream         // the stdout reader's short way for a session's stream lines
	pass      *gateway.Pass   // the process's to the node's model gateway (models.go); nil: none
}

func (a *Agent) send(msg any) { a.system.Root.Send(a.self, msg) }

// workDir is where the agent starts: its session's workspace, or the host's
// working_dir, or the node's own directory.
func (a *Agent) workDir() string {
	switch {
	case a.ws != nil:
		return a.ws.Cwd
	case a.host.WorkingDir != "":
		return a.host.WorkingDir
	}
	if a.cfg.Dir != "" {
		return a.cfg.Dir
	}
	dir, _ := os.Getwd()
	return dir
}

// newDialect makes the host's dialect for an agent started in dir.
func (a *Agent) newDialect(dir string) error {
	d, err := dialect.New(a.host.Dialect, dialect.Options{Dir: dir, Command: a.host.Command, Params: a.host.ParamsJSON,
		TextInput: a.host.InputFormat == "text", PlainText: plainText(a.host)})
	if err != nil {
		return err
	}
	a.dialect, a.caps = d, map[string]bool{}
	for _, c := range d.Capabilities() {
		a.caps[c] = true
	}
	return nil
}

// spawn starts the process on a goroutine; it reports with processStarted. extra are
// the session's own args (a dialect's resume).
func (a *Agent) spawn(extra []string) {
	a.to(phaseStarting)
	dir := a.workDir()
	var env []string
	if a.waitTrace != nil { // a process of the waiting session's own
		env = traceEnv(a.waitTrace)
	}
	sb := a.cfg.Sandbox
	if a.wsSandbox != nil {
		sb = a.wsSandbox
	}
	models, modelArgs, err := a.issuePass()
	if err != nil {
		a.send(&processStarted{err: err})
		return
	}
	env = append(env, models...)
	extra = append(slices.Clip(extra), modelArgs...)
	put := a.transcriptToPut(dir)
	a.off(func(context.Context) {
		var p *process
		var err error
		if err = put(); err != nil {
			a.send(&processStarted{err: err})
			return
		}
		if a.cfg.InProc != nil {
			p, err = startInProc(a.host, a.cfg.InProc, a.stream, a.cfg.WriteTimeout, a.shared.writes, a.send)
		} else {
			l := launch{host: a.host, dir: dir, env: env, dialect: a.dialect, args: extra, sandbox: sb}
			p, err = startProcess(l, a.cfg.Env, a.stream, a.shared.writes, a.send)
		}
		a.send(&processStarted{proc: p, err: err})
	}, func() { a.send(&processStarted{err: errNodeStopping}) })
}

// errNodeStopping is what the agent is told of work refused because its node stops.
var errNodeStopping = errors.New("agent: the node is stopping")

// off runs f off the actor on a goroutine of the node's Routines, which wait for it
// when the node stops. Once they refuse (the node's Stop began), refused runs instead,
// on the actor: it must only report, with a.send.
func (a *Agent) off(f func(ctx context.Context), refused func()) {
	if !a.cfg.Routines.Go(f) {
		refused()
	}
}

// Receive implements actor.Actor. It never blocks.
func (a *Agent) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.onActorStarted(c)
	case *processStarted:
		a.onStarted(m)
	case *workspaceOpened:
		a.onWorkspaceOpened(m)
	case *workspaceClosed:
		a.onWorkspaceClosed(m)
	case *workspaceMeasured:
		a.onWorkspaceMeasured(m)
	case *StartSession:
		a.startSession(m)
	case *linesRead:
		a.onLinesRead(m)
	case *rawLine:
		a.readAt = m.at
		a.onRawLine(m.line)
		a.readAt = time.Time{}
		a.stream.taken()
	case *frameError:
		a.onFrameError(m)
		a.stream.taken()
	case *stderrLine:
		a.onStderr(m)
	case *stderrClosed:
		a.onStderrClosed(m)
	case *stdoutClosed:
		a.onStdoutClosed(m)
	case *processExited:
		a.onExited(m)
		a.maybeGone()
	case *modelCalled:
		a.onModelCalled(m)
	case *checkpointDone:
		a.onCheckpointDone(m)
	case *transcriptPlaced:
		a.onTranscriptPlaced(m)
	case *writeFailed:
		a.onWriteFailed(m)
	case *answerArrived:
		a.onAnswer(m)
	case *shadowArrived:
		a.onShadow(m)
	case *timerFired:
		a.onTimer(c, m)
	case *requestsDue:
		a.onRequestsDue()
	case *Interrupt:
		respond(c, a.interrupt(m.Reason))
	case *SendMessage:
		respond(c, a.sendMessage(m.Text))
	case *RoutesChanged:
		a.cfg.Routes, a.cfg.Promoted = m.Routes, m.Promoted
	case *Shutdown:
		a.shutdown(m.Reason)
	case *Handover:
		respond(c, a.onHandover(m))
	case *actor.Stopping:
		a.forceStop()
	}
}

// onActorStarted starts the agent's process, or waits for its first session when each
// session has a process of its own.
func (a *Agent) onActorStarted(c actor.Context) {
	a.system, a.self, a.parent = c.ActorSystem(), c.Self(), c.Parent()
	if err := a.newDialect(a.workDir()); err != nil {
		a.onStarted(&processStarted{err: err})
		return
	}
	if !a.dialect.Reusable() || a.cfg.Workspace != nil {
		// One process per session: started with the session's own args, in its own
		// workspace.
		a.to(phaseUnspawned)
		return
	}
	a.spawn(nil)
}

// onLinesRead takes the lines the stdout reader read together, in order.
func (a *Agent) onLinesRead(m *linesRead) {
	a.readAt = m.at
	for _, l := range m.lines {
		if l.msg != nil {
			a.onLine(l.msg)
		} else {
			a.onStreamLine(l.typ, m.buf[l.start:l.end:l.end])
		}
	}
	a.readAt = time.Time{}
	a.stream.taken()
}

// onStderrClosed counts the stderr lines dropped, and the process may be gone.
func (a *Agent) onStderrClosed(m *stderrClosed) {
	if m.dropped > 0 {
		a.cfg.Metrics.StderrLines.WithLabelValues(a.host.Name, "dropped").Add(float64(m.dropped))
	}
	a.reading--
	a.maybeGone()
}

// onStdoutClosed: the stdout reader is done, and the process may be gone.
func (a *Agent) onStdoutClosed(m *stdoutClosed) {
	a.stream.taken()
	a.reading--
	if m.err != nil {
		a.log.Warn("agent stdout read failed", "pid", a.pid(), "err", m.err)
	}
	a.maybeGone()
}

func (a *Agent) pid() int {
	if a.proc == nil {
		return 0
	}
	return a.proc.pid
}

func (a *Agent) onStarted(m *processStarted) {
	if m.err != nil {
		a.revokePass()
		a.shared.exit("start_failed").Inc()
		a.log.Error("agent did not start", "err", m.err)
		a.exitErr = m.err
		a.failWaiting(m.err.Error())
		a.finish(m.err.Error())
		return
	}
	a.proc, a.reading = m.proc, 2
	if a.measure != nil && m.proc.scratch != "" {
		a.measure.scratch.Store(&m.proc.scratch) // the session's TMPDIR counts too
	}
	a.proc.serve()
	a.shared.starts.Inc()
	if a.phase == phaseStopping { // shut down while starting
		a.climbLadder()
		return
	}
	if init := a.dialect.Init(); init != nil {
		a.to(phaseInitializing)
		a.proc.stdin.write(init)
		a.gen++
		a.after(a.host.InitTimeout.D(), timerInit, a.gen)
		return
	}
	a.ready()
}

func (a *Agent) ready() {
	a.to(phaseIdle)
	if w := a.waiting; w != nil {
		a.waiting = nil
		a.startSession(w)
	}
}

// failWaiting ends a session that never started on this process.
func (a *Agent) failWaiting(text string) {
	w := a.waiting
	if w == nil {
		return
	}
	a.waiting = nil
	r := &Result{Session: w.Session, Host: a.host.Name, Task: w.Task, Error: text, Attempt: w.Attempt, Duration: time.Since(w.Started)}
	endSpan(a.waitSpan, r)
	a.waitTrace, a.waitSpan = nil, nil
	a.report(r, w, false)
}

func (a *Agent) report(r *Result, start *StartSession, reusable bool) {
	m := &SessionEnded{PID: a.self, Result: r, Reusable: reusable, Start: start}
	if a.ws != nil && a.wsState != wsClosed || a.writing > 0 {
		// Sent with what the workspace holds, once it is closed; and once its checkpoints
		// are written, so that an attempt after it goes on from the latest.
		a.held = append(a.held, m)
		return
	}
	a.system.Root.Send(a.parent, m)
}

// afterWrites does what waited for the checkpoints being written: the agent's finish,
// or, without a workspace, sending the sessions' ends held for them.
func (a *Agent) afterWrites() {
	if a.writing > 0 {
		return
	}
	if reason := a.finishing; reason != "" {
		a.finishing = ""
		a.closeOrExit(reason)
		return
	}
	if a.ws == nil {
		for _, ended := range a.held {
			a.system.Root.Send(a.parent, ended)
		}
		a.held = nil
	}
}

func (a *Agent) onExited(m *processExited) {
	a.diedInInit = a.phase == phaseInitializing // the session waiting for it ends once its stderr is read
	if !a.to(phaseExited) {
		return
	}
	a.exitErr = m.err
	if a.reading > 0 {
		// Pipes held open by a grandchild are closed after the drain delay.
		a.ladder = append(a.ladder, a.after(a.cfg.DrainDelay, timerDrain, 0))
	}
	reason := "exit_ok"
	var exitErr *exec.ExitError
	if errors.As(m.err, &exitErr) {
		reason = "exit_error"
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			reason = "signal"
			if a.killed {
				reason = "killed"
			}
		}
	} else if m.err != nil {
		reason = "exit_error"
	}
	a.shared.exit(reason).Inc()
	a.revokePass() // its token dies with it
	a.log.Debug("agent exited", "pid", a.pid(), "reason", reason, "err", m.err)
	if a.proc != nil {
		a.proc.stdin.close()
	}
}

// maybeGone finishes once the process has exited and its stdout and stderr are read to
// the end.
func (a *Agent) maybeGone() {
	if a.phase != phaseExited || a.reading > 0 {
		return
	}
	tail := a.stderrTail.String()
	if a.diedInInit {
		a.failWaiting(fmt.Sprintf("host '%s' exited during initialization (%s)%s", a.host.Name, exitDescription(a.exitErr), tail))
	}
	text := "agent exited without result (" + exitDescription(a.exitErr) + ")" + tail
	if a.sess != nil {
		a.log.WarnContext(a.traceCtx(), "agent exited in a session", "pid", a.pid(), "session", a.sess.id, "err", text)
	}
	if s := a.sess; s != nil && s.leave != nil && s.leave.reason == wire.PausedAtLimit {
		a.goAway(s) // it gave up at its limit: paused, from its latest checkpoint
	} else if s != nil {
		// A reused process that died before it said anything of this session: the
		// session never really ran, so the router runs it again on a fresh process.
		retry := a.served > 1 && s.lines == 0 && (s.sink == nil || s.sink.lines.Load() == 0)
		a.endSession(&Result{Error: text, Retryable: retry}, false)
	}
	a.finish(text) // the parent stops this actor once it has read everything sent before
}

// exitDescription says how a process ended: "exit status 3", "killed by signal: killed".
func exitDescription(err error) string {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", exitErr.ExitCode())
	}
	return err.Error()
}

// finish reports the process gone, once. The parent stops the actor on AgentExited: were
// the actor to stop itself, the system message Terminated could overtake the
// SessionEnded still queued in the parent's mailbox.
func (a *Agent) finish(reason string) {
	if a.phase == phaseGone || !a.to(phaseGone) {
		return // already reported: the actor stopping after AgentExited ends here
	}
	for _, t := range a.ladder {
		t.Stop()
	}
	if a.requests != nil {
		a.requests.Stop()
	}
	if a.writing > 0 {
		a.finishing = reason // its checkpoints are written first, from its workspace
		return
	}
	a.closeOrExit(reason)
}

// closeOrExit closes the workspace, after which AgentExited is sent, or sends it.
func (a *Agent) closeOrExit(reason string) {
	if a.ws != nil && a.wsState == wsOpen {
		a.closeWorkspace(reason) // AgentExited follows its close
		return
	}
	for _, ended := range a.held {
		a.system.Root.Send(a.parent, ended)
	}
	a.held = nil
	a.system.Root.Send(a.parent, &AgentExited{PID: a.self, Reason: reason})
}

// stop stops the process: at once when it has none, else by the stop ladder.
func (a *Agent) stop() {
	switch a.phase {
	case phaseNew, phaseUnspawned:
		if a.wsState == wsOpening {
			a.wsState = wsStopOpened // stopped once the workspace it is opening is there
			return
		}
		a.failWaiting("agent stopped before its process started")
		a.finish("stopped before its process started")
	case phaseStarting:
		a.to(phaseStopping) // onStarted climbs the ladder once the process is there
	case phaseInitializing, phaseIdle, phaseBusy:
		a.to(phaseStopping)
		a.climbLadder()
	}
}

// climbLadder runs the stop ladder: stdin close, SIGTERM to the group, SIGKILL to the
// group.
func (a *Agent) climbLadder() {
	a.proc.stdin.close()
	a.ladder = append(a.ladder,
		a.after(termDelay, timerTerm, 0),
		a.after(termDelay+a.host.StopGrace.D(), timerKill, 0))
}

// forceStop kills what is left when the actor stops for any reason.
func (a *Agent) forceStop() {
	if a.measure != nil {
		a.stopMeasuring()
	}
	if a.proc != nil && a.phase.live() {
		a.killed = true
		if err := signalGroup(a.proc.pid, syscall.SIGKILL); err != nil {
			a.log.Error("kill agent process group", "pid", a.proc.pid, "err", err)
		}
		a.proc.stdin.close()
	}
	a.closePipes()
	a.finish("actor stopped")
}

// closePipes closes the read ends still open, which ends their readers.
func (a *Agent) closePipes() {
	if a.proc == nil {
		return
	}
	a.proc.stdout.Close() // a reader at its end has closed it already: no harm
	if a.proc.stderr != nil {
		a.proc.stderr.Close()
	}
}

func (a *Agent) onTimer(c actor.Context, m *timerFired) {
	switch m.kind {
	case timerInit:
		if a.phase == phaseInitializing && m.gen == a.gen {
			a.failWaiting(fmt.Sprintf("host '%s' did not acknowledge initialization", a.host.Name))
			a.stop()
		}
	case timerSession, timerIdle, timerInterrupt, timerBudget:
		a.onSessionTimer(m)
	case timerCheckpoint:
		if s := a.sess; s != nil && s.gen == m.gen {
			a.checkpointTranscript(s, "interval")
			a.everyInterval(s)
		}
	case timerDrain:
		if a.phase == phaseExited && a.reading > 0 {
			a.log.Warn("agent exited but its output stays open (a child holds it); closing", "pid", a.proc.pid)
			a.killed = true
			if err := signalGroup(a.proc.pid, syscall.SIGKILL); err != nil {
				a.log.Error("kill agent process group", "pid", a.proc.pid, "err", err)
			}
			a.closePipes()
		}
	case timerTerm, timerKill:
		// Signal the group even after the leader exited: a grandchild may remain.
		if a.proc == nil || a.phase == phaseGone {
			return
		}
		sig := syscall.SIGTERM
		if m.kind == timerKill {
			sig = syscall.SIGKILL
		}
		a.killed = true
		if err := signalGroup(a.proc.pid, sig); err != nil {
			a.log.Error("signal agent process group", "pid", a.proc.pid, "signal", sig, "err", err)
		}
	}
}

func (a *Agent) onWriteFailed(m *writeFailed) {
	if !m.timeout {
		return // the process is going; its exit ends the session
	}
	a.log.Warn("agent stopped reading stdin", "pid", a.pid(), "timeout", a.cfg.WriteTimeout)
	if a.sess != nil {
		a.endSession(&Result{Error: fmt.Sprintf("agent stopped reading stdin: a write timed out after %v", a.cfg.WriteTimeout)}, false)
	}
	a.stop()
}

func (a *Agent) onStderr(m *stderrLine) {
	h := a.host.Name
	if m.dropped > 0 {
		a.cfg.Metrics.StderrLines.WithLabelValues(h, "dropped").Add(float64(m.dropped))
	}
	a.cfg.Metrics.StderrLines.WithLabelValues(h, "published").Inc()
	if m.line != "" {
		a.stderrTail.add(m.line)
	}
	data, _ := json.Marshal(struct {
		Line    string `json:"line,omitempty"`
		Dropped int    `json:"dropped,omitempty"`
		PID     int    `json:"pid"`
	}{m.line, m.dropped, a.pid()})
	a.publish(a.sessionID(), wire.EventStderr, data)
}

func (a *Agent) onFrameError(m *frameError) {
	a.cfg.Metrics.FrameErrors.WithLabelValues(a.host.Name, m.reason).Inc()
	typ := wire.EventFrameInvalid
	if m.reason == "too_long" {
		typ = wire.EventFrameTooLong
	}
	data, _ := json.Marshal(struct {
		Reason string `json:"reason"`
		Size   int    `json:"size"`
		Limit  int    `json:"limit"`
		Error  string `json:"error"`
	}{m.reason, m.size, a.host.MaxLineBytes, m.err.Error()})
	a.publish(a.sessionID(), typ, data)
	if a.sess == nil {
		return
	}
	if m.reason == "too_long" && resultLine.Match(m.head) {
		// The agent has said its last word, and nothing else will end the session:
		// without this it would wait for its idle timeout, or for ever. What the
		// process does next is unknown, so it is not given another session.
		a.endSession(&Result{Error: fmt.Sprintf("the agent's result was a line of %d bytes, over max_line_bytes (%d) of host %s, and was dropped: raise max_line_bytes, or have the agent write less",
			m.size, a.host.MaxLineBytes, a.host.Name)}, false)
		return
	}
	a.sess.touch(a.host.IdleTimeout > 0)
}

// resultLine tells a result by the start of its line, as agents write it: the native
// protocol's and Claude Code's {"type": "result", …}.
var resultLine = regexp.MustCompile(`^\s*\{\s*"type"\s*:\s*"result"`)

// sessionID is the current session's id, or "_" between sessions.
func (a *Agent) sessionID() string {
	if a.sess != nil {
		return a.sess.id
	}
	return "_"
}

// publish sends one event; payloads over the server's limit are replaced by a stub.
// Events carry no headers: their subject names host, session and type, and headers
// would cost more than the rest of the publish on this, the hottest path.
func (a *Agent) publish(session, typ string, data []byte) {
	if err := bus.PublishEvent(a.cfg.Conn, a.host.Name, session, typ, data); err != nil {
		a.shared.events.Inc()
	}
}

// countMessage counts one message read, without a label lookup per line.
func (a *Agent) countMessage(t protocol.Type) { a.counter(t).Inc() }

// counter is messages_total of type t, looked up once.
func (a *Agent) counter(t protocol.Type) prometheus.Counter {
	c, ok := a.messages[t]
	if !ok {
		if a.messages == nil {
			a.messages = map[protocol.Type]prometheus.Counter{}
		}
		c = a.shared.message(t)
		a.messages[t] = c
	}
	return c
}
