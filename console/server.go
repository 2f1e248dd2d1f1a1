package console

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/api"
	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/integrations"
	"github.com/agentmux/agentmux/internal/htmlpage"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

//go:embed assets
var assets embed.FS

// Defaults and bounds of a Server.
const (
	DefaultAddr    = config.DefaultConsoleAddr
	defaultRecent  = 200 // ended sessions on the page
	maxAnswerBytes = 64 << 10
	busTimeout     = 10 * time.Second // a request to the fleet: rules, budgets, grants
	sessionEvents  = 512              // a session page's stream buffer
)

// followed are the event types the sessions table is kept from: each session's life,
// its requests and answers.
var followed = []string{"session.started", "session.ended", "request.answered", "question", "approval", "tool_call",
	"listen:unhandled", wire.EventWorkspaceConflict, wire.EventSessionPaused, wire.EventSessionResumed}

// Config is what a Server needs.
type Config struct {
	Conn *nats.Conn
	JS   jetstream.JetStream
	// Addr is where it listens: beyond loopback it needs Token.
	Addr string
	// Token (AGENTMUX_CONSOLE_TOKEN), when set, signs people in with it and a name;
	// it must carry at least 128 bits.
	Token string
	// Hosts are the names people reach the console by beyond this machine (a proxy's
	// name): it answers requests for these, loopback names and the address it listens
	// on, and refuses the rest (DNS rebinding).
	Hosts []string
	// Name is who answers without a sign-in (on loopback, with no token). On a bus
	// with users, the console's own user needs role console to answer as anyone else.
	Name string
	// OIDC, when set, signs people in with the team's identity provider, its client
	// secret OIDCSecret; a token sign-in is then only the loopback link's.
	OIDC       *config.OIDC
	OIDCSecret string
	// Getenv reads the secrets the manifest names: the keys of [notify.X] action
	// links and Slack apps' signing secrets. Nil: os.Getenv.
	Getenv func(string) string
	// Tokens are the API's bearer tokens ([[api.tokens]], their secrets read).
	Tokens []api.Token
	// Manifest is what the console serves: its hosts (tasks) and attached sources
	// (hooks). Nil: tasks to any host, and no hooks.
	Manifest *config.Manifest
	Log      *slog.Logger
}

// Server serves the console.
type Server struct {
	cfg  Config
	view *view
	// api serves /v1 beside the page, and gives the page's answers (package api).
	api  *api.Server
	gate *gate       // who signs in, and how
	oidc *oidcSignIn // nil: no identity provider
	// integrations take action links and Slack's button presses (package integrations).
	integrations *integrations.Server
	link         string    // the sign-in path with the token, on a console that made its own
	tries        *throttle // sign-in tries
	pending      *store.PendingStore
	subs         []*nats.Subscription
	cancel       context.CancelFunc
	mux          *http.ServeMux
	// csrf refuses a state-changing request from a page elsewhere: browsers send
	// Sec-Fetch-Site (or Origin) with it, which such a page cannot forge.
	csrf http.CrossOriginProtection
}

// New starts following the bus; Close stops it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := checkSignIn(&cfg); err != nil {
		return nil, err
	}
	pending, err := store.OpenPending(ctx, cfg.JS, cfg.Conn)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, view: newView(defaultRecent), tries: newThrottle(), pending: pending}
	s.api, err = api.New(api.Config{Conn: cfg.Conn, JS: cfg.JS, Tokens: cfg.Tokens, Manifest: cfg.Manifest, Page: page{s}, Log: cfg.Log,
		Allow: func(remote string) (bool, time.Duration) { return s.tries.allow(remote, time.Now()) }})
	if err != nil {
		return nil, err
	}
	s.integrations, err = integrations.New(integrations.Config{Manifest: cfg.Manifest, Getenv: cfg.Getenv, Answer: s.api.Give, Log: cfg.Log,
		Pending: func(ctx context.Context, id string) (*wire.PendingRequest, error) {
			p, _, err := pending.Get(ctx, id)
			return p, err
		},
		Refused: func(remote string) bool {
			ok, _ := s.tries.allow(remote, time.Now())
			return !ok
		}})
	if err != nil {
		return nil, err
	}
	var key []byte
	if cfg.OIDC != nil {
		key = derive(cfg.OIDCSecret, "agentmux console sign-in")
		s.oidc = newOIDCSignIn(cfg.OIDC, cfg.OIDCSecret, cfg.Log)
	}
	switch {
	case cfg.Token != "":
		s.gate = newGate(cfg.Token, "", key)
	case Loopback(cfg.Addr) && cfg.OIDC == nil:
		// On loopback with no token, any process of the machine could answer through
		// the console (an agent among them): its page signs in with a token it makes,
		// given in the link it prints, as the one person it answers for.
		token, err := newToken()
		if err != nil {
			return nil, err
		}
		s.gate, s.link = newGate(token, cfg.Name, key), "/login?token="+token
	default:
		s.gate = newGate("", "", key) // the identity provider's only: with it, no link signs anyone in
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if err := pending.Watch(wctx, s.view.onPending); err != nil {
		cancel()
		return nil, fmt.Errorf("console: watch the requests waiting for people: %w", err)
	}
	for _, typ := range followed {
		subject := wire.EventsOfType(typ)
		sub, err := cfg.Conn.Subscribe(subject, func(m *nats.Msg) {
			if bus.CheckEvent(m, subject) == nil { // a node's, not the server's (bus.CheckEvent)
				s.view.onEvent(m.Subject, m.Data)
			}
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("console: follow session events: %w", err)
		}
		_ = sub.SetPendingLimits(-1, 64<<20)
		s.subs = append(s.subs, sub)
	}
	s.routes()
	return s, nil
}

// Close stops following the bus, once the Slack answers under way are given.
func (s *Server) Close() {
	s.cancel()
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.integrations.Close()
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.file("index.html", "text/html; charset=utf-8"))
	m.HandleFunc("GET /app.js", s.file("app.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /app.css", s.file("app.css", "text/css; charset=utf-8"))
	m.HandleFunc("GET /manifest.webmanifest", s.file("manifest.webmanifest", "application/manifest+json"))
	m.HandleFunc("GET /sw.js", s.file("sw.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /icon-192.png", s.file("icon-192.png", "image/png"))
	m.HandleFunc("GET /icon-512.png", s.file("icon-512.png", "image/png"))
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.signIn)
	m.HandleFunc("GET /oidc/start", s.oidcStart)
	m.HandleFunc("GET /oidc/callback", s.oidcCallback)
	s.integrations.Routes(m)
	m.HandleFunc("GET /api/me", s.me)
	m.HandleFunc("GET /api/stream", s.stream)
	m.HandleFunc("POST /api/respond", s.respond)
	m.HandleFunc("POST /api/respond/bulk", s.respondBulk)
	m.HandleFunc("GET /api/grants", s.grants)
	m.HandleFunc("POST /api/grants/{id}/revoke", s.revokeGrant)
	m.HandleFunc("GET /api/rules", s.rules)
	m.HandleFunc("GET /api/rules/propose", s.proposeRules)
	m.HandleFunc("POST /api/rules", s.saveRules)
	m.HandleFunc("GET /api/policy/shadow", s.shadows)
	m.HandleFunc("POST /api/policy/shadow/{name}/promote", s.promoteShadow)
	m.HandleFunc("POST /api/policy/shadow/{name}/demote", s.promoteShadow)
	m.HandleFunc("GET /api/policy/suggest", s.suggest)
	m.HandleFunc("GET /api/budgets", s.budgets)
	m.HandleFunc("POST /api/budgets/{host}/raise", s.raiseBudget)
	m.HandleFunc("GET /api/audit", s.api.SearchAudit)
	m.HandleFunc("GET /api/sessions/{id}", s.api.Trail)
	m.HandleFunc("GET /api/sessions/{id}/checkpoints", s.api.Checkpoints)
	m.HandleFunc("GET /api/sessions/{id}/stream", s.sessionStream)
	s.api.Routes(m)
	s.mux = m
}

// ServeHTTP implements http.Handler: security headers on everything, and a sign-in
// before anything but the sign-in page and its style.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if !s.hostAllowed(r.Host) {
		s.cfg.Log.Warn("console request for another host refused (DNS rebinding?)", "host", r.Host, "remote", r.RemoteAddr)
		errorf(w, http.StatusMisdirectedRequest, "this console does not answer to %q: open it by a loopback address or a name it was given (--public-host)", r.Host)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		s.mux.ServeHTTP(w, r) // bearer tokens, or the page's sign-in (package api)
		return
	}
	if s.gate.who(r) == nil && !open[r.URL.Path] && !strings.HasPrefix(r.URL.Path, "/act/") && !strings.HasPrefix(r.URL.Path, "/slack/") {
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		errorf(w, http.StatusUnauthorized, "sign in at /login")
		return
	}
	if err := s.csrf.Check(r); err != nil {
		errorf(w, http.StatusForbidden, "a request from another site")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// open are the paths served before a sign-in, beside action links (/act/: the link
// is the credential) and Slack's callbacks (/slack/: signed by Slack).
var open = map[string]bool{"/login": true, "/app.css": true, "/oidc/start": true, "/oidc/callback": true,
	"/manifest.webmanifest": true, "/icon-192.png": true, "/icon-512.png": true} // what installing the app reads

// SignInLink is the path that signs the one person of a console without a token in
// (with the token it made), or "" when people sign in with AGENTMUX_CONSOLE_TOKEN.
func (s *Server) SignInLink() string { return s.link }

func (s *Server) file(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			errorf(w, http.StatusInternalServerError, "%v", err)
			return
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(data)
	}
}

// loginPage is the sign-in page; it says what was wrong with the last try.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.link != "" && r.URL.Query().Get("token") != "" {
		s.signIn(w, r) // the link the console printed
		return
	}
	var out htmlpage.Page
	out.Start("Sign in · agentmux console", "login", ` action="/login"`)
	out.Para("error", "alert", signInProblems[r.URL.Query().Get("error")])
	if s.oidc != nil {
		out.Markup(`  <p><a class="button" id="oidc" href="/oidc/start">Sign in with `)
		out.Text(s.oidc.host())
		out.Markup("</a></p>\n  <p>Your answers are recorded under the name your identity provider gives you.</p>\n")
	}
	switch {
	case s.link != "":
		out.Markup(`  <p>This console signs in with the link <code>agentmux console</code> printed on its
  terminal when it started, or, when its output was no terminal, kept in its state directory
  (<code>console-&lt;port&gt;.link</code>, named by <code>sign_in_link_in=</code> in its log): open that link.</p>
`)
	case s.gate.token != nil:
		out.Markup(`  <p>Your answers are recorded as <code>human:&lt;name&gt;</code>.</p>
  <label>Name <input name="name" autocomplete="username" required pattern="[A-Za-z0-9_-]+"></label>
  <label>Token <input name="token" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
`)
	}
	out.Send(w, http.StatusOK)
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	// A right token is never held up: on loopback every process shares one address, so
	// throttling every try would let any of them lock every person out. Wrong tries are
	// throttled by address and account (and all together); the token carries 128 random
	// bits, so guessing is hopeless however fast.
	cookie, problem := s.gate.signIn(r)
	if cookie == nil {
		if ok, wait := s.tries.allow(r.RemoteAddr+" "+strings.TrimSpace(r.FormValue("name")), time.Now()); !ok {
			s.cfg.Log.Warn("console sign-in throttled", "remote", r.RemoteAddr, "retry_after", wait)
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			http.Redirect(w, r, "/login?error=throttled", http.StatusSeeOther)
			return
		}
		s.cfg.Log.Info("console sign-in refused", "remote", r.RemoteAddr, "why", signInProblems[problem])
		http.Redirect(w, r, "/login?error="+problem, http.StatusSeeOther)
		return
	}
	http.SetCookie(w, cookie)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	p := s.gate.who(r)
	writeJSON(w, http.StatusOK, map[string]any{"name": p.name, "decider": "human:" + p.name, "role": p.role, "signed_in": s.link == ""})
}

// stream sends the page its view, then every change, as server-sent events.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	c := s.view.subscribe()
	defer s.view.unsubscribe(c)
	api.SendEvents(w, r, c)
}

// respond gives a person's answer: the first answer wins, a later one is refused with
// who answered first.
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	var a api.Answer
	if err := json.NewDecoder(io.LimitReader(r.Body, maxAnswerBytes)).Decode(&a); err != nil || a.ID == "" || len(a.Value) == 0 {
		writeJSON(w, http.StatusBadRequest, &wire.RespondReply{Code: wire.RespondInvalid, Error: `post {"id", "value", "reason"}`})
		return
	}
	p := s.gate.who(r)
	if p.role != config.APIOperator {
		writeJSON(w, http.StatusForbidden, &wire.RespondReply{Code: wire.RespondForbidden,
			Error: p.name + " may look, not answer: answering takes one of the console's operator_groups"})
		return
	}
	s.api.Answer(w, r, p.name, "", a)
}

// Refused tells the console that the bus refused it something: an answer or attached
// request waiting on that subject ends with the refusal (the console's user may not
// answer as that person, or put requests to the nodes).
func (s *Server) Refused(r *bus.PermissionError) { s.api.Refused(r) }

// sessionStream sends a session's events: those kept, then each as it arrives.
func (s *Server) sessionStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !wire.IsName(id) {
		errorf(w, http.StatusBadRequest, "%q is not a session id", id)
		return
	}
	c := make(chan []byte, sessionEvents)
	if err := s.sessionEvents(r.Context(), id, c); err != nil {
		errorf(w, http.StatusBadGateway, "%v", err)
		return
	}
	api.SendEvents(w, r, c)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// page is what the API shares with the console's page (api.Page).
type page struct{ s *Server }

func (p page) Person(r *http.Request) (name, role string, ok bool) {
	if who := p.s.gate.who(r); who != nil {
		return who.name, who.role, true
	}
	return "", "", false
}

func (p page) Sessions() []*wire.SessionRow {
	p.s.view.mu.Lock()
	defer p.s.view.mu.Unlock()
	return p.s.view.sessionList()
}

func (p page) Pending() []*wire.PendingRequest {
	p.s.view.mu.Lock()
	defer p.s.view.mu.Unlock()
	return p.s.view.pendingList()
}
