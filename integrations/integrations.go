package integrations

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentmux/agentmux/actionlink"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/notify"
	"github.com/agentmux/agentmux/wire"
)

// answerTimeout bounds a person's answer given through an integration.
const answerTimeout = 10 * time.Second

// Config is what the integrations need of the console that serves them.
type Config struct {
	// Manifest's [notify.X] tables say which give action links (their keys) and Slack
	// buttons (their apps' signing secrets), read with Getenv (nil: os.Getenv).
	Manifest *config.Manifest
	Getenv   func(string) string
	// Answer gives person's answer to request id on the bus; Pending reads request id.
	Answer  func(ctx context.Context, person, id string, a wire.RespondRequest) (*wire.RespondReply, error)
	Pending func(ctx context.Context, id string) (*wire.PendingRequest, error)
	// Refused counts a refused link against the address it came from, and reports
	// whether that address has tried too often (the console's sign-in throttle).
	Refused func(remote string) (tooMany bool)
	Log     *slog.Logger
}

// Server serves what a notification carries back: an action link's page
// (/act/<notify>/<token>) and Slack's button presses (/slack/<notify>). Each is its own
// credential (the link's signature, Slack's), so the console serves them before any
// sign-in.
type Server struct {
	cfg        Config
	actionKeys map[string][]byte    // each notify's action links' key
	slack      map[string]*slackApp // the Slack apps whose buttons come back here
	bg         sync.WaitGroup       // Slack answers under way
}

// New reads the keys and secrets of cfg.Manifest's notifies; an action link or Slack
// button whose secret is not set is an error that says which.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, actionKeys: map[string][]byte{}, slack: map[string]*slackApp{}}
	if cfg.Manifest == nil {
		return s, nil
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for name, n := range cfg.Manifest.Notify {
		if n.ActionKeyEnv != "" {
			key, err := actionlink.Key(n.ActionKeyEnv, getenv(n.ActionKeyEnv))
			if err != nil {
				return nil, fmt.Errorf("console: [notify.%s] gives people action links: %w", name, err)
			}
			s.actionKeys[name] = key
		}
		if n.Buttons() {
			secret := getenv(n.SigningSecretEnv)
			if secret == "" {
				return nil, fmt.Errorf("console: [notify.%s]'s Slack buttons come back signed with the app's signing secret, and $%s is not set: export it (Slack app settings, Basic Information)",
					name, n.SigningSecretEnv)
			}
			s.slack[name] = &slackApp{notify: n, secret: secret, client: notify.NewClient(n.Timeout.D(), n.AllowPrivate)}
		}
	}
	return s, nil
}

// Routes adds the integrations' routes to m.
func (s *Server) Routes(m *http.ServeMux) {
	m.HandleFunc("GET /act/{notify}/{token}", s.actConfirm)
	m.HandleFunc("POST /act/{notify}/{token}", s.act)
	m.HandleFunc("POST /slack/{notify}", s.slackAction)
}

// Close waits for the Slack answers under way.
func (s *Server) Close() { s.bg.Wait() }

func errorf(w http.ResponseWriter, code int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}
