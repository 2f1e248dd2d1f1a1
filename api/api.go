package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/tracing"
	"github.com/agentmux/agentmux/wire"
)

// Routes serves the API on m, under /v1.
func (s *Server) Routes(m *http.ServeMux) {
	m.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	m.HandleFunc("GET /v1/sessions", s.api(readers, s.listSessions))
	m.HandleFunc("GET /v1/pending", s.api(readers, s.listPending))
	m.HandleFunc("POST /v1/pending/{id}/answer", s.api(writers, s.answer))
	m.HandleFunc("GET /v1/audit", s.api(readers, func(w http.ResponseWriter, r *http.Request, _ *caller) { s.SearchAudit(w, r) }))
	m.HandleFunc("GET /v1/sessions/{id}/audit", s.api(readers, func(w http.ResponseWriter, r *http.Request, _ *caller) { s.Trail(w, r) }))
	m.HandleFunc("GET /v1/sessions/{id}/checkpoints", s.api(readers, func(w http.ResponseWriter, r *http.Request, _ *caller) { s.Checkpoints(w, r) }))
	m.HandleFunc("GET /v1/events", s.api(readers, s.streamEvents))
	m.HandleFunc("POST /v1/tasks", s.api(writers, s.submit))
	m.HandleFunc("POST /v1/hooks/claude-code", s.api(hooks, s.agentHook(config.AttachedClaudeCode)))
	m.HandleFunc("POST /v1/hooks/codex", s.api(hooks, s.agentHook(config.AttachedCodex)))
	m.HandleFunc("/v1/mcp", s.api(hooks, s.mcp(s.mcpServers())))
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		apiErrorf(w, http.StatusNotFound, "not_found", "no %s %s in the API; /v1/openapi.json lists what there is", r.Method, r.URL.Path)
	})
}

func (s *Server) listSessions(w http.ResponseWriter, _ *http.Request, _ *caller) {
	writeJSON(w, http.StatusOK, map[string]any{"sessions": s.cfg.Page.Sessions()})
}

// listPending lists the requests that can still be answered, soonest deadline first;
// ?state=all adds those settled in the last minutes (answered, cancelled, past due).
func (s *Server) listPending(w http.ResponseWriter, r *http.Request, _ *caller) {
	all := false
	switch state := r.URL.Query().Get("state"); state {
	case "", wire.StatePending:
	case "all":
		all = true
	default:
		apiErrorf(w, http.StatusBadRequest, "invalid", "state %q: give pending (the default) or all", state)
		return
	}
	list := s.cfg.Page.Pending()
	if !all {
		list = slices.DeleteFunc(list, func(p *wire.PendingRequest) bool { return p.State != wire.StatePending })
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": list})
}

// answer answers a request waiting for a person, as the caller.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, c *caller) {
	var a Answer
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&a); err != nil || len(a.Value) == 0 {
		writeJSON(w, http.StatusBadRequest, &wire.RespondReply{Code: wire.RespondInvalid, Error: `post {"value", "reason", "scope"}`})
		return
	}
	a.ID = r.PathValue("id")
	via := wire.ViaToken // a bearer token's answer; the page's is a person's
	if c.page {
		via = ""
	}
	s.Answer(w, r, c.name, via, a)
}

// taskRequest is what POST /v1/tasks takes.
type taskRequest struct {
	Host   string         `json:"host"`
	Prompt string         `json:"prompt"`
	ID     string         `json:"id"`
	TTL    string         `json:"ttl"`
	Resume string         `json:"resume"`
	Meta   map[string]any `json:"meta"`
}

// submit queues a task, as `agentmux submit` does, as the caller: the audit records
// who asked for its session.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, c *caller) {
	var t taskRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxTaskBytes)).Decode(&t); err != nil {
		apiErrorf(w, http.StatusBadRequest, "invalid", `post {"host", "prompt", "id", "ttl"}: %v`, err)
		return
	}
	if problem := s.taskProblem(&t); problem != "" {
		apiErrorf(w, http.StatusBadRequest, "invalid", "%s", problem)
		return
	}
	var ttl time.Duration
	if t.TTL != "" {
		var err error
		if ttl, err = time.ParseDuration(t.TTL); err != nil || ttl < time.Second {
			apiErrorf(w, http.StatusBadRequest, "invalid", "ttl %q: give a duration of at least 1s, e.g. \"1h\"", t.TTL)
			return
		}
	}
	if t.ID == "" {
		t.ID = "t-" + nuid.Next()
	}
	data, _ := json.Marshal(&wire.Task{ID: t.ID, Host: t.Host, Prompt: t.Prompt, Resume: t.Resume, Meta: t.Meta, By: c.name})
	ctx, cancel := context.WithTimeout(r.Context(), publishTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(t.ID)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	// A client that sends W3C trace context has its task's session join that trace.
	msg := &nats.Msg{Subject: wire.TaskSubjectBy(t.Host, c.name), Data: data, Header: tracing.Carried(r.Header.Get("traceparent"), r.Header.Get("tracestate"))}
	ack, err := s.cfg.JS.PublishMsg(ctx, msg, opts...)
	switch {
	case err != nil:
		apiErrorf(w, http.StatusBadGateway, "unavailable", "the task was not queued: %v", err)
		return
	case ack.Duplicate:
		apiErrorf(w, http.StatusConflict, "duplicate", "task %s was submitted already, within the last %v; give the new one another id", t.ID, store.DuplicateWindow)
		return
	}
	s.cfg.Log.Info("task submitted through the API", "task", t.ID, "host", t.Host, "by", c.name)
	writeJSON(w, http.StatusAccepted, map[string]any{"id": t.ID, "host": t.Host, "queued": true})
}

// taskProblem says what is wrong with a task, or "".
func (s *Server) taskProblem(t *taskRequest) string {
	switch {
	case t.Host == "" || t.Prompt == "":
		return `a task needs a "host" and a "prompt"`
	case !wire.IsName(t.Host):
		return "no host " + t.Host
	}
	if t.ID != "" {
		if err := wire.CheckTaskID(t.ID); err != nil {
			return "id: " + err.Error()
		}
	}
	if m := s.cfg.Manifest; m != nil {
		switch h := m.Hosts[t.Host]; {
		case h == nil:
			return "no host " + t.Host + " in the console's manifest"
		case h.Attached != nil:
			return t.Host + " is an attached source: its sessions are started by people, not by tasks"
		}
	}
	return ""
}

// streamEvents streams session events as server-sent events, each one JSON object with
// its host, session, type and payload (data):
// those of ?host=, ?session= and ?type= when given, else every one.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, _ *caller) {
	q := r.URL.Query()
	host, session, typ := q.Get("host"), q.Get("session"), q.Get("type")
	for _, v := range []string{host, session} {
		if v != "" && !wire.IsName(v) {
			apiErrorf(w, http.StatusBadRequest, "invalid", "%q is not a host or session name", v)
			return
		}
	}
	if typ != "" && !eventType.MatchString(typ) {
		apiErrorf(w, http.StatusBadRequest, "invalid", "%q is not an event type", typ)
		return
	}
	subject := wire.EventSubject(orAny(host), orAny(session), typ)
	if typ == "" {
		subject = wire.EventSubject(orAny(host), orAny(session), ">")
	}
	c := make(chan []byte, eventsBuffer)
	behind := false // the callbacks of one subscription run one at a time
	sub, err := s.cfg.Conn.Subscribe(subject, func(m *nats.Msg) {
		if behind || bus.CheckEvent(m, m.Subject) != nil {
			return // cut off already, or not a node's
		}
		h, sess, t, _ := wire.ParseEventSubject(m.Subject)
		line, _ := json.Marshal(&streamedEvent{Host: h, Session: sess, Type: t, Data: RawOrString(m.Data)})
		select {
		case c <- line:
		default:
			s.cfg.Log.Warn("an API event stream fell behind; it is cut off and its client reconnects", "subject", subject)
			behind = true
			close(c)
		}
	})
	if err != nil {
		apiErrorf(w, http.StatusBadGateway, "unavailable", "follow events: %v", err)
		return
	}
	_ = sub.SetPendingLimits(-1, 64<<20)
	defer func() { _ = sub.Unsubscribe() }()
	SendEvents(w, r, c)
}

// eventType is what an event's type may be: tokens of a subject, never a wildcard.
var eventType = regexp.MustCompile(`^[A-Za-z0-9_:-]+(\.[A-Za-z0-9_:-]+)*$`)

// streamedEvent is one event of GET /v1/events.
type streamedEvent struct {
	Host    string          `json:"host"`
	Session string          `json:"session"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

func orAny(v string) string {
	if v == "" {
		return "*"
	}
	return v
}
