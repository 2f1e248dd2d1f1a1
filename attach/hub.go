package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/routines"
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
	// forwardMargin is how much longer than the deadline a request sent on to its
	// session's holder is waited for.
	forwardMargin = 5 * time.Second
	claimTries    = 3 // races for a session's claim before this node takes it anyway
)

// Config is what a Hub needs.
type Config struct {
	Conn *nats.Conn
	// JS reads the audit of a session opened again after this node started, to number
	// its attempt after the ones before.
	JS jetstream.JetStream
	// Holders records which node holds each session, so that a request another node
	// takes is sent on to it; nil on a node alone.
	Holders *store.Holders
	Node    string
	// Sources are the attached hosts this node runs (config.Host.Attached set).
	Sources map[string]*config.Host
	// Submit starts session on the router (router.Submit) as attempt, with prompt as
	// its task's text, asked for by the user by.
	Submit func(host, session, prompt, by string, attempt int)
	Log    *slog.Logger
	// Routines owns the hub's goroutines (its pruning, a session's opening, a request
	// sent on to its holder, a holder's release); nil: a group of the hub's own.
	Routines *routines.Group
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
	draining chan struct{} // closed by Drain
}

type ended struct {
	attempt int
	user    string
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
	if cfg.Routines == nil {
		cfg.Routines = routines.New()
	}
	return &Hub{cfg: cfg, sessions: map[string]*session{}, ended: map[string]ended{}, stop: make(chan struct{}), draining: make(chan struct{})}
}

// Start takes the sources' requests: on each source's subject, in the nodes' queue
// group, and on this node's own.
func (h *Hub) Start() error {
	if err := h.subscribe(); err != nil {
		h.Stop()
		return err
	}
	h.cfg.Routines.Go(func(context.Context) { h.prune() }) // refused, the node stops: nothing to prune
	return nil
}

// subscribe takes the sources' requests.
func (h *Hub) subscribe() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.cfg.Sources {
		for _, sub := range []struct{ subject, queue string }{
			{wire.AttachSubject(name), wire.AttachQueue},
			{wire.AttachNodeSubject(name, h.cfg.Node), ""},
		} {
			forwarded := sub.queue == ""
			handler := func(m *nats.Msg) { h.onRequest(name, m, forwarded) }
			var s *nats.Subscription
			var err error
			if sub.queue != "" {
				s, err = h.cfg.Conn.QueueSubscribe(sub.subject, sub.queue, handler)
			} else {
				s, err = h.cfg.Conn.Subscribe(sub.subject, handler)
			}
			if err != nil {
				return fmt.Errorf("attach: take the requests of source %q: %w", name, err)
			}
			h.subs = append(h.subs, s)
		}
	}
	return nil
}

// Drain takes no more requests, and ends each open session as soon as none of its
// requests waits here: its record released, the session's next request opens it on
// another node. A draining node so stops at once for the attached sessions it holds,
// which run nothing between their agents' requests.
func (h *Hub) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsubscribe()
	select {
	case <-h.draining:
	default:
		close(h.draining)
	}
}

// Undrain takes requests again after a Drain.
func (h *Hub) Undrain() {
	h.mu.Lock()
	select {
	case <-h.draining:
		h.draining = make(chan struct{})
	default:
		h.mu.Unlock()
		return // not draining
	}
	h.mu.Unlock()
	if err := h.subscribe(); err != nil {
		h.cfg.Log.Error("undrained, but the attached sources' requests cannot be taken again", "err", err)
	}
}

// Stop takes no more requests. Open sessions end with their bridges, when the router
// stops their processes.
func (h *Hub) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsubscribe()
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
}

// drainingChan is closed when the hub drains.
func (h *Hub) drainingChan() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

// unsubscribe takes no more requests; callers hold mu.
func (h *Hub) unsubscribe() {
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
	h.subs = nil
}

// Agent is the in-process agent of source's sessions (an agent.InProc).
func (h *Hub) Agent(source string) func(stdin io.Reader, stdout io.Writer) error {
	host := h.cfg.Sources[source]
	return func(stdin io.Reader, stdout io.Writer) error {
		return newBridge(h, host, stdout).run(stdin)
	}
}

// onRequest takes one request off the bus (a NATS callback: it never waits). One taken
// in the queue group for a session this node does not hold goes to its holder, when
// another node holds it; one sent to this node alone is this node's.
func (h *Hub) onRequest(source string, m *nats.Msg, forwarded bool) {
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
	key := source + "/" + req.Session
	if !forwarded && h.cfg.Holders != nil && !h.holds(key) {
		if !h.cfg.Routines.Go(func(context.Context) { h.route(source, m, &req, reply) }) {
			reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachEnded, Error: "attach: this node is stopping; ask again"})
		}
		return
	}
	h.take(source, m, &req, reply)
}

// holds reports whether this node holds the session of key open.
func (h *Hub) holds(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[key] != nil
}

// take puts req to its session on this node, opening the session when it is not.
func (h *Hub) take(source string, m *nats.Msg, req *wire.AttachRequest, reply func(*wire.AttachReply)) {
	host := h.cfg.Sources[source]
	key := source + "/" + req.Session
	h.mu.Lock()
	s := h.sessions[key]
	prior, known := h.ended[key]
	switch {
	case s == nil && known && prior.user != req.User:
		h.mu.Unlock()
		reply(othersEnded(req.Session, source, prior.user))
		return
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
		last := -1 // none: the first attempt is 0, as a task's
		if known {
			last = prior.attempt
		}
		opened := s
		defer func() {
			if !h.cfg.Routines.Go(func(context.Context) { h.begin(opened, req, last, known) }) {
				h.finish(opened, true) // the node is stopping: its requests are answered that it ended
			}
		}()
	}
	h.mu.Unlock()
	select {
	case s.calls <- &call{req: req, msg: m, reply: reply}:
	default:
		reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachBusy,
			Error: fmt.Sprintf("attach: session %s has %d requests waiting already", req.Session, queuedCalls)})
	}
}

// route sends req to the node that holds its session, or claims the session for this
// node when none does or its holder no longer answers.
func (h *Hub) route(source string, m *nats.Msg, req *wire.AttachRequest, reply func(*wire.AttachReply)) {
	host := h.cfg.Sources[source]
	ctx, cancel := context.WithTimeout(context.Background(), host.QuestionTimeout.D()+forwardMargin)
	defer cancel()
	for range claimTries {
		holder, rev, err := h.cfg.Holders.Holder(ctx, source, req.Session)
		if err != nil {
			h.cfg.Log.Warn("attached session's holder not read; this node takes the request", "session", req.Session, "err", err)
			break
		}
		if holder == "" && req.End {
			break // nothing is open to end: take says so, and claims nothing
		}
		if holder == "" || holder == h.cfg.Node {
			if err := h.cfg.Holders.Claim(ctx, source, req.Session, h.cfg.Node, 0); errors.Is(err, store.ErrHeld) {
				continue // another node claimed it meanwhile: send it there
			}
			break
		}
		resp, err := h.cfg.Conn.RequestWithContext(ctx, wire.AttachNodeSubject(source, holder), m.Data)
		if err == nil {
			_ = m.Respond(resp.Data)
			return
		}
		if !errors.Is(err, nats.ErrNoResponders) {
			reply(&wire.AttachReply{Session: req.Session, Code: wire.AttachEnded,
				Error: fmt.Sprintf("attach: node %s holds session %s and did not answer: %v", holder, req.Session, err)})
			return
		}
		// Its holder is gone: this node takes the session over.
		if err := h.cfg.Holders.Claim(ctx, source, req.Session, h.cfg.Node, rev); errors.Is(err, store.ErrHeld) {
			continue
		}
		h.cfg.Log.Info("attached session taken over from a node that no longer answers", "session", req.Session, "from", holder)
		break
	}
	h.take(source, m, req, reply)
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

// begin numbers the session's attempt, after last (-1: none) and any the audit knows
// of, and starts it on the router.
func (h *Hub) begin(s *session, first *wire.AttachRequest, last int, known bool) {
	attempt := last
	if !known && h.cfg.JS != nil {
		// Its earlier attempts, and whose it was, from the audit: this node may have
		// restarted, or taken the session over from a node that died.
		ctx, cancel := context.WithTimeout(context.Background(), auditRead)
		records, err := store.ReadAudit(ctx, h.cfg.JS, s.id)
		cancel()
		if err != nil {
			h.cfg.Log.Warn("attached session opened without reading its earlier attempts from the audit; it starts as attempt 0", "session", s.id, "err", err)
		}
		owner := ""
		for _, r := range records {
			attempt = max(attempt, r.Attempt)
			if r.Kind == wire.EventSessionStarted && r.Host == s.source && r.By != "" {
				owner = r.By
			}
		}
		if owner != "" && owner != s.user {
			h.refuse(s, owner, attempt)
			return
		}
	}
	s.attempt = attempt + 1
	if h.cfg.Holders != nil {
		// A session opened by a request sent here alone is this node's too (its holder
		// ended it meanwhile); a claim another node holds stays theirs.
		ctx, cancel := context.WithTimeout(context.Background(), auditRead)
		if err := h.cfg.Holders.Claim(ctx, s.source, s.id, h.cfg.Node, 0); err != nil && !errors.Is(err, store.ErrHeld) {
			h.cfg.Log.Warn("attached session opened without recording this node as its holder", "session", s.id, "err", err)
		}
		cancel()
	}
	what := fmt.Sprintf("%s session of %s", config.AttachedAgent(h.cfg.Sources[s.source].Attached.Dialect), first.User)
	if first.Cwd != "" {
		what += " in " + first.Cwd
	}
	if first.Transcript != "" {
		what += " (transcript " + first.Transcript + ")"
	}
	h.cfg.Submit(s.source, s.id, what, s.user, s.attempt)
}

// othersEnded refuses a request to open again session id of source, which was owner's.
func othersEnded(id, source, owner string) *wire.AttachReply {
	return &wire.AttachReply{Session: id, Code: wire.AttachForbidden,
		Error: fmt.Sprintf("attach: session %s of %s was %s's; a token of another user cannot open it again", id, source, owner)}
}

// refuse closes s, which the audit says is owner's, not its user's: its requests, and
// any later one of another user, are refused as forbidden.
func (h *Hub) refuse(s *session, owner string, attempt int) {
	h.mu.Lock()
	delete(h.sessions, s.key)
	h.ended[s.key] = ended{attempt: attempt, user: owner, at: time.Now()}
	h.mu.Unlock()
	h.cfg.Log.Warn("an attached request refused: the session is another user's", "session", s.id, "user", s.user, "owner", owner)
	for {
		select {
		case c := <-s.calls:
			c.reply(othersEnded(s.id, s.source, owner))
		default:
			return
		}
	}
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
	h.ended[s.key] = ended{attempt: s.attempt, user: s.user, at: time.Now()}
	h.mu.Unlock()
	if h.cfg.Holders != nil {
		// Refused, the node is stopping: its record names it until a request finds it
		// gone and takes the session over.
		h.cfg.Routines.Go(func(context.Context) {
			ctx, cancel := context.WithTimeout(context.Background(), auditRead)
			defer cancel()
			if err := h.cfg.Holders.Release(ctx, s.source, s.id, h.cfg.Node); err != nil {
				h.cfg.Log.Warn("attached session ended, but its record still names this node; a request that finds it gone takes it over", "session", s.id, "err", err)
			}
		})
	}
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
