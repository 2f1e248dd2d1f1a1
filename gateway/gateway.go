package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/protocol"
)

// Defaults and bounds of a Gateway.
const (
	// DefaultMaxBody bounds a call's request: Anthropic's Messages API takes up to 32 MB.
	DefaultMaxBody = 32 << 20
	// upstreamTimeout bounds a provider's first byte; a stream then takes as long as it
	// streams (a connection's timeout, when it gives one, in place).
	upstreamTimeout = 10 * time.Minute
)

// Config is what a Gateway needs.
type Config struct {
	// Connections are the manifest's [connections.X]: the upstreams, each with the
	// variable that holds its key in the node's environment.
	Connections map[string]*config.Connection
	// Pricing names the models a connection's metrics are labelled by, beside those
	// the connection names; any other is "other".
	Pricing config.Pricing
	// Getenv reads the keys. Nil: os.Getenv.
	Getenv  func(string) string
	MaxBody int64 // 0: DefaultMaxBody
	// Transport reaches the providers. Nil: http.DefaultTransport's settings.
	Transport http.RoundTripper
	// Tracer makes a span of each call, in its session's trace, as OpenTelemetry's
	// GenAI conventions name it (nil: none).
	Tracer trace.Tracer
	// KeepBodies, when above 0, keeps up to this many bytes of each call's request and
	// of its answer in the Call, for the audit ([gateway] record = "full"), the keys and
	// the agent's token cut out. 0: none kept.
	KeepBodies int
	Metrics    *metrics.Set
	Log        *slog.Logger
}

// Call is one model call an agent made through the gateway, as its provider answered.
type Call struct {
	Session    string
	Connection string
	// Model is the model that answered (the provider's answer names it), or the one
	// asked for.
	Model string
	// Status is the provider's HTTP status, 0 when it gave none (unreachable).
	Status int
	// Usage is what the provider counted; Measured says it gave usage at all.
	Usage    protocol.Usage
	Measured bool
	// Lost: part of the answer was too large to read for its usage.
	Lost bool
	// Finish is why the answer ended, as the provider said (end_turn, tool_use, stop…).
	Finish []string
	// RetryAfter is the provider's retry-after of a 429, 503 or 529 (0: none given).
	RetryAfter time.Duration
	Took       time.Duration
	// Bodies are the call's request and answer, with Config.KeepBodies (nil: none kept).
	Bodies *Bodies
}

// Bodies are a call's request and its provider's answer as they passed through the
// gateway (a stream's events as they came), each up to Config.KeepBodies bytes, with
// the connection's key and the agent's token replaced by "[redacted]".
type Bodies struct {
	Method, Path string // the provider's path
	Request      []byte
	Response     []byte
	// RequestBytes and ResponseBytes are their whole lengths; RequestCut and ResponseCut
	// say they were longer than kept.
	RequestBytes, ResponseBytes int64
	RequestCut, ResponseCut     bool
}

// Gateway serves the model APIs of the node's connections to its agents on loopback.
// Each agent process calls with a token of its own (a Pass), which the gateway swaps
// for the connection's key: the key never leaves the node. The providers' answers go
// back as they stream, and what each counted is told to the pass's report.
type Gateway struct {
	cfg     Config
	keys    map[string]string // by connection
	proxies map[string]*httputil.ReverseProxy
	limits  map[string]*limits
	passes  passes
	buffers buffers
	ln      net.Listener
	srv     *http.Server
	served  chan struct{} // closed when Serve returned
}

// UnknownConnectionError is a pass asked for to a connection the gateway does not
// serve.
type UnknownConnectionError struct{ Name string }

func (e *UnknownConnectionError) Error() string {
	return fmt.Sprintf("gateway: no connection %q: define [connections.%s] in the manifest", e.Name, e.Name)
}

// New makes a gateway to cfg's connections, reading their keys now.
func New(cfg Config) (*Gateway, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	g := &Gateway{cfg: cfg, keys: map[string]string{}, proxies: map[string]*httputil.ReverseProxy{}, limits: map[string]*limits{},
		passes: passes{by: map[[sha256.Size]byte]*Pass{}}, served: make(chan struct{})}
	for name, c := range cfg.Connections {
		a, ok := apiOf(c.Provider)
		if !ok {
			return nil, fmt.Errorf("gateway: connections.%s: provider %q is not one the gateway speaks (anthropic, gemini, or an OpenAI-compatible one)", name, c.Provider)
		}
		base := c.BaseURL
		if base == "" {
			base = a.home()
		}
		upstream, err := url.Parse(base)
		if err != nil || upstream.Host == "" || (upstream.Scheme != "http" && upstream.Scheme != "https") {
			return nil, fmt.Errorf("gateway: connections.%s: base_url %q is not an http(s) URL", name, base)
		}
		if c.APIKeyEnv != "" {
			g.keys[name] = cfg.Getenv(c.APIKeyEnv)
			if g.keys[name] == "" {
				cfg.Log.Warn("the gateway's connection has no key: its variable is empty in the node's environment", "connection", name, "api_key_env", c.APIKeyEnv)
			}
		}
		g.proxies[name], g.limits[name] = g.proxy(c, a, upstream), newLimits(c.RateLimit)
	}
	return g, nil
}

// Start serves the gateway on addr ("127.0.0.1:0": a port of the kernel's choosing).
// Only loopback: the tokens travel in the clear.
func (g *Gateway) Start(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("gateway: %q is not a loopback address: agents reach the gateway on this machine only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", addr, err)
	}
	g.ln = ln
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(g.cfg.Log.Handler(), slog.LevelWarn)}
	go func() {
		defer close(g.served)
		if err := g.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.cfg.Log.Error("the model gateway stopped serving", "err", err)
		}
	}()
	return nil
}

// URL is where the gateway serves, "http://127.0.0.1:port".
func (g *Gateway) URL() string {
	if g.ln == nil {
		return ""
	}
	return "http://" + g.ln.Addr().String()
}

// Close stops serving: calls under way are given until ctx ends, then cut.
func (g *Gateway) Close(ctx context.Context) error {
	if g.srv == nil {
		return nil
	}
	err := g.srv.Shutdown(ctx)
	if err != nil {
		_ = g.srv.Close()
	}
	<-g.served
	if t, ok := g.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return err
}
