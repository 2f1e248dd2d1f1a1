package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmux/agentmux/internal/sandbox"
)

const shutdownTimeout = 5 * time.Second

// Server serves /metrics, /healthz and /readyz.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	once sync.Once
}

// Serve listens on addr ("127.0.0.1:0" picks a port) and serves until Close. ready
// reports whether the node can take work; /readyz answers 503 with its error otherwise.
// With a token, /metrics answers only requests bearing it (Authorization: Bearer);
// /healthz and /readyz, which tell nothing but up and ready, answer anyone.
func Serve(addr, token string, s *Set, ready func() error, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w; set [metrics] addr to a free address", addr, err)
	}
	ln = sandbox.Guard(ln) // the programs of this machine's nodes are turned away
	mux := http.NewServeMux()
	mux.Handle("/metrics", bearer(token, promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry, EnableOpenMetrics: true})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	srv := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(srv.done)
		if err := srv.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	return srv, nil
}

// bearer lets through requests bearing token; an empty token lets through all.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentmux metrics"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <the token [metrics] token_env holds>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close shuts the server down; it is idempotent and nil-safe.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = s.srv.Shutdown(ctx) // Serve reports anything but ErrServerClosed
		<-s.done
	})
}
