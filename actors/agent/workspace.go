package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// measureEvery is how often an open workspace's size is measured; a request of its
// session has it measured at once too.
const measureEvery = 5 * time.Second

// A session on a host that gives each session a workspace of its own runs on a process
// of its own: the workspace is opened before the process starts, in it, and closed once
// the process is gone; the session's end is reported with what the workspace holds.
//
//	none ──► opening ──► open ──► closing ──► closed
//	            │
//	            └─► stopOpened: the agent was stopped meanwhile; closed once it is there

type wsState uint8

const (
	wsNone wsState = iota
	wsOpening
	wsStopOpened
	wsOpen
	wsClosing
	wsClosed
)

type (
	workspaceOpened struct {
		ws  *workspace.Workspace
		sb  *sandbox.Sandbox // the session's own, walled from its host's other sessions
		err error
	}
	workspaceClosed struct {
		res    *wire.Workspace
		reason string // the agent's reason for going: its AgentExited's
	}
	workspaceMeasured struct {
		bytes   int64
		changed []string // the files that differ from its base
		err     error    // why changed could not be read
	}
)

// measurer measures an open workspace's size off the actor, every measureEvery and when
// poked, until stopped.
type measurer struct {
	poke    chan struct{}
	stop    context.CancelFunc     // ends the measuring, and a git command it runs
	scratch atomic.Pointer[string] // the session's process's TMPDIR, once it started
}

func (a *Agent) startMeasuring(p *workspace.Provider, ws *workspace.Workspace) {
	ctx, stop := context.WithCancel(context.Background())
	m := &measurer{poke: make(chan struct{}, 1), stop: stop}
	a.measure = m
	a.off(func(node context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(node, cancel) // the node stopping ends it too
		defer stop()
		t := time.NewTicker(measureEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-m.poke:
			}
			changed, err := p.Changed(ctx, ws)
			bytes := workspace.Size(ws.Path)
			if tmp := m.scratch.Load(); tmp != nil {
				bytes += workspace.Size(*tmp)
			}
			a.send(&workspaceMeasured{bytes: bytes, changed: changed, err: err})
		}
	}, func() {}) // refused, the node is stopping: not measured
}

// pokeMeasure has the workspace measured now (a request of its session came).
func (a *Agent) pokeMeasure() {
	if a.measure == nil {
		return
	}
	select {
	case a.measure.poke <- struct{}{}:
	default:
	}
}

func (a *Agent) stopMeasuring() {
	if a.measure != nil {
		a.measure.stop()
		a.measure = nil
	}
	a.measured(0)
}

// measured notes the workspace's size on the host's gauge.
func (a *Agent) measured(bytes int64) {
	a.cfg.Metrics.WorkspaceBytes.WithLabelValues(a.host.Name).Add(float64(bytes - a.wsBytes))
	a.wsBytes = bytes
}

// onWorkspaceMeasured ends the session whose workspace grew over the host's cap.
func (a *Agent) onWorkspaceMeasured(m *workspaceMeasured) {
	if a.measure == nil {
		return // closed meanwhile
	}
	a.measured(m.bytes)
	if m.err != nil {
		a.log.WarnContext(a.traceCtx(), "the files a session changed could not be read; the conflict radar misses them", "err", m.err)
	} else if s := a.sess; s != nil {
		a.touched(s, wire.TouchChanged, m.changed)
	}
	max := a.host.Workspace.MaxBytes
	if max <= 0 || m.bytes <= max || a.sess == nil {
		return
	}
	a.cfg.Metrics.WorkspaceOver.WithLabelValues(a.host.Name).Inc()
	a.timeOut(fmt.Sprintf("workspace: %s and the session's TMPDIR hold %d bytes, over the host's max_workspace_bytes (%d); the session was stopped: raise the cap or have the agent keep its build output out of the checkout", a.ws.Path, m.bytes, max))
}

// openWorkspace opens m's workspace off the actor; workspaceOpened says when it is there.
func (a *Agent) openWorkspace(m *StartSession) {
	a.wsState = wsOpening
	p, session, attempt, from, host := a.cfg.Workspace, m.Session, m.Attempt, m.From, a.cfg.Sandbox
	name := fmt.Sprintf("hosts.%s.%s.%d", a.host.Name, session, attempt)
	var lost *wire.Checkpoint // the checkpoint whose workspace could not be put back
	if r := m.Restored; r != nil && r.Workspace != nil && r.Checkpoint.Workspace != nil {
		cw := r.Checkpoint.Workspace
		from.Snapshot = &workspace.Snapshot{Base: cw.Base, Head: cw.Head, Commit: cw.Commit, Bundle: r.Workspace}
		lost = &wire.Checkpoint{Session: session, Seq: r.Checkpoint.Seq, Why: "resume"}
	}
	a.off(func(context.Context) {
		ws, err := p.Open(context.Background(), session, attempt, from)
		if err != nil && from.Snapshot != nil {
			a.send(&checkpointDone{c: lost, err: fmt.Errorf("the workspace of checkpoint %d was not put back: %w; the session goes on in a fresh checkout", lost.Seq, err)})
			from.Snapshot = nil
			ws, err = p.Open(context.Background(), session, attempt, from)
		}
		var sb *sandbox.Sandbox
		if err == nil && host != nil {
			var own []string
			if own, err = p.Writes(ws); err == nil {
				sb = host.Walled(name, p.Root().Work(), own)
			} else {
				p.Discard(context.Background(), ws)
			}
		}
		a.send(&workspaceOpened{ws: ws, sb: sb, err: err})
	}, func() { a.send(&workspaceOpened{err: errNodeStopping}) })
}

// onWorkspaceOpened starts the waiting session's process in its workspace.
func (a *Agent) onWorkspaceOpened(m *workspaceOpened) {
	stopped := a.wsState == wsStopOpened
	if m.err != nil {
		a.wsState = wsNone
		a.log.ErrorContext(a.traceCtx(), "session's workspace not made", "err", m.err)
		a.failWaiting(m.err.Error())
		a.finish(m.err.Error())
		return
	}
	if stopped || a.waiting == nil {
		// Stopped while it was made: the session never ran in it.
		a.wsState = wsClosing
		m.sb.Close() // never built: nothing started in it
		p, ws := a.cfg.Workspace, m.ws
		closed := &workspaceClosed{reason: "stopped before its process started"}
		a.off(func(context.Context) {
			p.Discard(context.Background(), ws)
			a.send(closed)
		}, func() { a.send(closed) }) // refused: the next node on this store removes it
		a.failWaiting("agent stopped before its process started")
		return
	}
	a.ws, a.wsSandbox, a.wsState, a.wsTouched = m.ws, m.sb, wsOpen, map[string]bool{}
	if err := a.newDialect(a.ws.Cwd); err != nil {
		a.onStarted(&processStarted{err: err})
		return
	}
	a.startMeasuring(a.cfg.Workspace, a.ws)
	a.spawn(a.sessionArgs(a.waiting))
}

// closeWorkspace closes the workspace off the actor, now that the process is gone: the
// session ended ok if the end held says so.
func (a *Agent) closeWorkspace(reason string) {
	a.wsState = wsClosing
	a.stopMeasuring()
	a.wsSandbox.Close() // and with it what the session's agent left running
	a.wsSandbox = nil
	ok := len(a.held) > 0 && a.held[len(a.held)-1].Result.OK
	p, ws := a.cfg.Workspace, a.ws
	a.off(func(context.Context) {
		a.send(&workspaceClosed{res: p.Close(context.Background(), ws, ok), reason: reason})
	}, func() { a.send(&workspaceClosed{reason: reason}) }) // refused: the next node on this store removes it
}

// onWorkspaceClosed reports the session's end, with what its workspace holds, and then
// that the agent is gone.
func (a *Agent) onWorkspaceClosed(m *workspaceClosed) {
	a.wsState = wsClosed
	if m.res == nil { // discarded: the agent goes
		a.finish(m.reason)
		return
	}
	if m.res.Error != "" {
		a.log.Warn("session's workspace closed, not all of it well", "branch", m.res.Branch, "err", m.res.Error)
	}
	for _, ended := range a.held {
		ended.Result.Workspace = m.res
		a.system.Root.Send(a.parent, ended)
	}
	a.held = nil
	a.system.Root.Send(a.parent, &AgentExited{PID: a.self, Reason: m.reason})
}

// editing tells the fleet's conflict radar which files the approval raw asks to change,
// and returns what other live sessions on the repository touched of them.
func (a *Agent) editing(s *session, raw []byte) []wire.WorkspaceConflict {
	paths := a.ws.RequestPaths(raw)
	if len(paths) == 0 {
		return nil
	}
	a.touched(s, wire.TouchEditing, paths)
	if a.cfg.Radar == nil {
		return nil
	}
	return a.cfg.Radar.With(a.host.Workspace.Repo, s.id, paths)
}

// touched publishes a workspace.touched event for the paths of kind not published yet
// in this session.
func (a *Agent) touched(s *session, kind string, paths []string) {
	var fresh []string
	for _, p := range paths {
		key := kind + "\x00" + p
		if !a.wsTouched[key] {
			a.wsTouched[key] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return
	}
	data, _ := json.Marshal(&wire.WorkspaceTouch{Repo: a.host.Workspace.Repo, Session: s.id, Host: a.host.Name, Node: a.cfg.Node,
		Branch: a.ws.Branch, Kind: kind, Paths: fresh, Time: time.Now().UnixMilli()})
	if err := bus.PublishEvent(a.cfg.Conn, a.host.Name, s.id, wire.EventWorkspaceTouched, data); err != nil {
		a.shared.events.Inc()
	}
}
