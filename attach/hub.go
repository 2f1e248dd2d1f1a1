package attach

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// Bounds of a hub.
const (
	queuedCalls  = 64               // requests of one session waiting for its bridge
	auditRead    = 5 * time.Second  // reading a reopened session's earlier attempts
	maxSessionID = 128              // bytes of an agent's session id
	rememberEnds = 24 * time.Hour   // how long an ended session's attempt is kept in memory
	pruneEvery   = 10 * time.Minute // how often those are pruned
)

// Config is what a Hub needs.
type Config struct {
	Conn *nats.Conn
	// JS reads the audit of a session opened again after this node started, to number
	// its attempt after the ones before.
	JS   jetstream.JetStream
	Node string
	// Sources are the attached hosts this node runs (config.Host.Attached set).
	Sources map[string]*config.Host
	// Submit starts session on the router (router.Submit) as attempt, with prompt as
	// its task's text, asked for by the user by.
	Submit func(host, session, prompt, by string, attempt int)
	Log    *slog.Logger
}

// Hub takes the requests of attached sessions from the bus and hands each to the bridge
// running its session, opening the session first when it is new.
type Hub struct {
	cfg      Config
	mu       sync.Mutex
	sessions map[string]*session // open sessions, by key
	ended    map[string]ended    // the last attempt of sessions that ended, by key
	subs     []*nats.Subscription
	stop     chan struct{}
}

type ended struct {
	attempt int
	at      time.Time
}

// session is one open attached session: the requests waiting for its bridge.
type session struct {
	key, source, id, user string
	attempt               int
	calls                 chan *call
}

// call is one request waiting for its answer, and the message to reply to.
type call struct {
	req   *wire.AttachRequest
	msg   *nats.Msg
	reply func(*wire.AttachReply)
}

// New makes a hub; Start subscribes it.
func New(cfg Config) *Hub {
	return &Hub{cfg: cfg, sessions: map[string]*session{}, ended: map[string]ended{}, stop: make(chan struct{})}
}

// Start takes the sources' requests: on each source's subject, in the nodes' queue
// group, and on this node's own.
func (h *Hub) Start() error {
	for name := range h.cfg.Sources {
		for _, sub := range []struct{ subject, queue string }{
			{wire.AttachSubject(name), wire.AttachQueue},
			{wire.AttachNodeSubject(name, h.cfg.Node), ""},
		} {
			handler := func(m *nats.Msg) { h.onRequest(name, m) }
			var s *nats.Subscription
			var err error
			if sub.queue != "" {
				s, err = h.cfg.Conn.QueueSubscribe(sub.subject, sub.queue, handler)
			} else {
				s, err = h.cfg.Conn.Subscribe(sub.subject, handler)
			}
			if err != nil {
				h.Stop()
				return fmt.Errorf("attach: take the requests of source %q: %w", name, err)
			}
			h.subs = append(h.subs, s)
		}
	}
	go h.prune()
	return nil
}

// Stop takes no more requests. Open sessions end with their bridges, when the router
// stops their processes.
func (h *Hub) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
	h.subs = nil
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
}

// Agent is the in-process agent of source's sessions (an agent.InProc).
func (h *Hub) Agent(source string) func(stdin io.Reader, stdout io.Writer) error {
	host := h.cfg.Sources[source]
	return func(stdin io.Reader, stdout io.Writer) error {
		return newBridge(h, host, stdout).run(stdin)
	}
}

// onRequest takes one request off the bus (a NATS callback: it never waits).
func (h *Hub) onRequest(source string, m *nats.Msg) {
	if m.Reply == "" {
		return // only a request with an inbox is one (bus.CheckEvent's rule for events)
	}
	reply := func(r *wire.AttachReply) {
		r.Node = h.cfg.Node
		b, _ := json.Marshal(r)
		_ = m.Respond(b)
	}
	var req wire.AttachRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(&wire.AttachReply{Code: wire.AttachInvalid, Error: "attach: the request is not JSON: " + err.Error()})
		return
	}
	if err := check(&req); err != nil {
		reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachInvalid, Error: err.Error()})
		return
	}
	host := h.cfg.Sources[source]
	key := source + "/" + req.Session
	h.mu.Lock()
	s := h.sessions[key]
	switch {
	case s != nil && s.user != req.User:
		h.mu.Unlock()
		reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachForbidden,
			Error: fmt.Sprintf("attach: session %s of %s belongs to %s; a token of another user cannot ask in it", req.Session, source, s.user)})
		return
	case s == nil && req.End:
		h.mu.Unlock()
		reply(&wire.AttachReply{Session: req.Session, Outcome: "ended"})
		return
	case s == nil && h.open(source) >= host.Attached.MaxSessions:
		h.mu.Unlock()
		reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachBusy,
			Error: fmt.Sprintf("attach: node %s keeps %d sessions of %s open, its max_sessions; raise it or run the source on more nodes", h.cfg.Node, host.Attached.MaxSessions, source)})
		return
	case s == nil:
		s = &session{key: key, source: source, id: req.Session, user: req.User, calls: make(chan *call, queuedCalls)}
		h.sessions[key] = s
		prior, known := h.ended[key]
		go h.begin(s, &req, prior.attempt, known)
	}
	h.mu.Unlock()
	select {
	case s.calls <- &call{req: &req, msg: m, reply: reply}:
	default:
		reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachBusy,
			Error: fmt.Sprintf("attach: session %s has %d requests waiting already", req.Session, queuedCalls)})
	}
}

// check refuses a request agentmux cannot decide, saying why.
func check(r *wire.AttachRequest) error {
	switch {
	case r.Session == "" || len(r.Session) > maxSessionID || !wire.IsName(r.Session):
		return fmt.Errorf("attach: session id %q must be 1 to %d letters, digits, '_' and '-'", r.Session, maxSessionID)
	case r.User == "" || !wire.IsName(r.User):
		return fmt.Errorf("attach: user %q must be letters, digits, '_' and '-'", r.User)
	case r.End:
		return nil
	}
	msg, err := protocol.Decode(r.Request, protocol.PlainTextResult)
	if err != nil {
		return fmt.Errorf("attach: the request: %w", err)
	}
	if msg.Type != protocol.TypeApproval && msg.Type != protocol.TypeQuestion {
		return fmt.Errorf("attach: a request of type %q; an attached session asks approvals and questions", msg.Type)
	}
	return nil
}

// open counts source's open sessions; h.mu is held.
func (h *Hub) open(source string) int {
	n := 0
	for _, s := range h.sessions {
		if s.source == source {
			n++
		}
	}
	return n
}

// begin numbers the session's attempt, after any this node or the audit knows of, and
// starts it on the router.
func (h *Hub) begin(s *session, first *wire.AttachRequest, attempt int, known bool) {
	if !known && h.cfg.JS != nil {
		ctx, cancel := context.WithTimeout(context.Background(), auditRead)
		records, err := store.ReadAudit(ctx, h.cfg.JS, s.id)
		cancel()
		if err != nil {
			h.cfg.Log.Warn("attached session opened without reading its earlier attempts from the audit; it starts as attempt 1", "session", s.id, "err", err)
		}
		for _, r := range records {
			attempt = max(attempt, r.Attempt)
		}
	}
	s.attempt = attempt + 1
	what := fmt.Sprintf("%s session of %s", dialectName(h.cfg.Sources[s.source].Attached.Dialect), first.User)
	if first.Cwd != "" {
		what += " in " + first.Cwd
	}
	if first.Transcript != "" {
		what += " (transcript " + first.Transcript + ")"
	}
	h.cfg.Submit(s.source, s.id, what, s.user, s.attempt)
}

func dialectName(d string) string {
	switch d {
	case config.AttachedCodex:
		return "Codex"
	}
	return "Claude Code"
}

// bind gives the bridge that started session id of source its session.
func (h *Hub) bind(source, id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[source+"/"+id]
}

// finish ends s unless requests wait for it (then it goes on); with drop set it ends
// either way, and those requests are answered that it ended.
func (h *Hub) finish(s *session, drop bool) bool {
	h.mu.Lock()
	if len(s.calls) > 0 && !drop {
		h.mu.Unlock()
		return false
	}
	delete(h.sessions, s.key)
	h.ended[s.key] = ended{attempt: s.attempt, at: time.Now()}
	h.mu.Unlock()
	for {
		select {
		case c := <-s.calls:
			c.reply(&wire.AttachReply{Session: s.id, Attempt: s.attempt, Code: wire.AttachEnded,
				Error: "attach: session " + s.id + " ended before this request was answered"})
		default:
			return true
		}
	}
}

// prune forgets sessions that ended long ago.
func (h *Hub) prune() {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			h.mu.Lock()
			for k, e := range h.ended {
				if now.Sub(e.at) > rememberEnds {
					delete(h.ended, k)
				}
			}
			h.mu.Unlock()
		}
	}
}

// sessionOf is the session id a prompt line names.
func sessionOf(line []byte) (string, bool) {
	var p struct {
		Type    string `json:"type"`
		Session string `json:"session"`
	}
	if json.Unmarshal(line, &p) != nil || p.Type != "prompt" {
		return "", false
	}
	return strings.TrimSpace(p.Session), p.Session != ""
}
