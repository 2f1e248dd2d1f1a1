package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

//go:embed openapi.json
var openAPI []byte

// Bounds of the API.
const (
	maxTaskBytes   = 1 << 20
	maxAnswerBytes = 64 << 10
	publishTimeout = 10 * time.Second
	answerTimeout  = 10 * time.Second
	auditTimeout   = 10 * time.Second
	keepAlive      = 15 * time.Second
	eventsBuffer   = 1024 // an event stream's buffer: a client further behind is cut off, and reconnects
)

// Config is what a Server needs.
type Config struct {
	Conn *nats.Conn
	JS   jetstream.JetStream
	// Tokens are the bearer tokens ([[api.tokens]], their secrets read).
	Tokens []Token
	// Manifest is what the API serves: its hosts (tasks) and attached sources (hooks,
	// MCP). Nil: tasks to any host, and no hooks.
	Manifest *config.Manifest
	// Page is the console's page: its people call the API too, and the API lists what
	// it shows.
	Page Page
	// Allow says whether an address that sent a wrong token may try again, and when:
	// the console's throttle, which its sign-in shares.
	Allow func(remote string) (bool, time.Duration)
	Log   *slog.Logger
}

// Page is what the API shares with the console's page.
type Page interface {
	// Person is who signed in to the page that sent r, and their role; ok is false
	// when nobody did.
	Person(r *http.Request) (name, role string, ok bool)
	// Sessions are those running and those ended lately.
	Sessions() []*wire.SessionRow
	// Pending are the requests waiting for people, and those settled lately.
	Pending() []*wire.PendingRequest
}

// Server serves the API.
type Server struct {
	cfg     Config
	tokens  *tokens
	waiting refusals // answers and attached requests in flight
	// csrf refuses a write of a person signed in to the page that comes from a page
	// elsewhere: browsers send Sec-Fetch-Site (or Origin) with it, which such a page
	// cannot forge.
	csrf http.CrossOriginProtection
}

// New checks cfg's tokens.
func New(cfg Config) (*Server, error) {
	toks, err := newTokens(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, tokens: toks}, nil
}

// Answer is a person's answer to a request waiting for one.
type Answer struct {
	ID     string          `json:"id"`
	Value  json.RawMessage `json:"value"`
	Reason string          `json:"reason"`
	Scope  string          `json:"scope"` // "session": approve for the session
}

// Answer gives who's answer a to a request waiting for a person, and writes the
// reply. via is wire.ViaToken for an API token's answer. The status says the outcome:
// 200 taken, 404 no such request, 409 settled already (answered, cancelled, past its
// deadline), 400 an answer that does not fit the request, 403 not allowed.
func (s *Server) Answer(w http.ResponseWriter, r *http.Request, who, via string, a Answer) {
	if !wire.IsName(a.ID) {
		writeJSON(w, http.StatusNotFound, &wire.RespondReply{Code: wire.RespondNoSuch, Error: "no such request " + a.ID})
		return
	}
	reply, err := s.Give(r.Context(), who, a.ID, wire.RespondRequest{Value: a.Value, Reason: a.Reason, Scope: a.Scope, Via: via})
	if err != nil {
		writeJSON(w, http.StatusBadGateway, &wire.RespondReply{Code: wire.RespondFailed, Error: err.Error()})
		return
	}
	s.cfg.Log.Info("answered", "request", a.ID, "as", who, "via", via, "ok", reply.OK, "code", reply.Code)
	writeJSON(w, answerStatus(reply), reply)
}

// answerStatus is the HTTP status of an answer's reply.
func answerStatus(reply *wire.RespondReply) int {
	if reply.OK {
		return http.StatusOK
	}
	switch reply.Code {
	case wire.RespondNoSuch:
		return http.StatusNotFound
	case wire.RespondAnswered, wire.RespondCancelled, wire.RespondPastDeadline:
		return http.StatusConflict
	case wire.RespondInvalid:
		return http.StatusBadRequest
	case wire.RespondForbidden:
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}

// Give sends who's answer a to the request id; an error says why it did not reach
// the fleet (the bus's refusal, when it refused it, not a time-out).
func (s *Server) Give(ctx context.Context, who, id string, a wire.RespondRequest) (*wire.RespondReply, error) {
	return s.onBus(ctx, wire.RespondSubject(who, id), func(ctx context.Context) (*wire.RespondReply, error) {
		return store.Answer(ctx, s.cfg.Conn, who, id, a)
	})
}

// Revoke revokes grant id as who.
func (s *Server) Revoke(ctx context.Context, who, id string) (*wire.RespondReply, error) {
	return s.onBus(ctx, wire.RevokeSubject(who, id), func(ctx context.Context) (*wire.RespondReply, error) {
		return store.Revoke(ctx, s.cfg.Conn, who, id)
	})
}

// onBus does a person's act on subject within answerTimeout; a refusal of the bus
// (Refused) ends it with the refusal.
func (s *Server) onBus(ctx context.Context, subject string, do func(context.Context) (*wire.RespondReply, error)) (*wire.RespondReply, error) {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	ctx, done := s.waiting.wait(ctx, subject)
	defer done()
	reply, err := do(ctx)
	if err != nil {
		if cause := refusal(ctx); cause != nil {
			err = cause // the bus refused the answer: say so, not that it timed out
		}
		return nil, err
	}
	return reply, nil
}

// Refused tells the API that the bus refused its client something: an answer or
// attached request waiting on that subject ends with the refusal (the client's user
// may not answer as that person, or put requests to the nodes).
func (s *Server) Refused(r *bus.PermissionError) {
	s.waiting.refuse(r.Subject, r)
}

// SendEvents writes each message of c as a server-sent event until the client goes
// or c closes.
func SendEvents(w http.ResponseWriter, r *http.Request, c <-chan []byte) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		apiErrorf(w, http.StatusInternalServerError, "unsupported", "streaming is not supported here")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			_, _ = io.WriteString(w, ": keep-alive\n\n")
		case data, ok := <-c:
			if !ok {
				return // fell behind: the client reconnects for a snapshot
			}
			_, _ = fmt.Fprintf(w, "data: %s\n\n", data)
		}
		flusher.Flush()
	}
}

// RawOrString is b as it is when it is JSON, else as a JSON string.
func RawOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
