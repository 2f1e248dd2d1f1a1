package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/console"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/node"
)

// consoleShutdown bounds how long open pages hold up the console's exit.
const consoleShutdown = 5 * time.Second

func consoleCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("console", stdout, stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	addr := fs.String("addr", console.DefaultAddr, "listen on `host:port`; beyond loopback it needs AGENTMUX_CONSOLE_TOKEN")
	public := fs.String("public-host", "", "the `names` people reach it by beyond this machine (a,b): it answers only to these, loopback names and its address")
	as := fs.String("as", "", "`name` answers are recorded as without a sign-in (default: the bus user, or $USER)")
	logLevel := fs.String("log", "info", "log `level`: debug, info, warn, error")
	logFormat := logFormatFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	log, err := newFormattedLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return usageError(stderr, err)
	}
	guard(log)
	var running atomic.Pointer[console.Server] // for the refusal hook, once it is up
	c, err := dialWith("console", m, func(r *bus.PermissionError) {
		if srv := running.Load(); srv != nil {
			srv.Refused(r)
		}
		log.Warn("the bus refused the console", "err", r)
	}, nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("console disconnected from NATS; reconnecting", "err", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("console reconnected", "url", nc.ConnectedUrlRedacted()) }))
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", err)
		return exitError
	}
	defer c.close()
	name := *as
	if name == "" {
		if name, err = responder(c, ""); err != nil {
			fmt.Fprintln(stderr, "agentmux console:", err)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tokens, err := apiTokens(m, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", err)
		return exitUsage
	}
	cfg := console.Config{Conn: c.nc, JS: c.js, Addr: *addr, Token: os.Getenv("AGENTMUX_CONSOLE_TOKEN"), Hosts: list(*public),
		Name: name, Tokens: tokens, Manifest: m, Log: log}
	if o := m.Console.OIDC; o != nil {
		cfg.OIDC, cfg.OIDCSecret = o, os.Getenv(o.ClientSecretEnv)
	}
	srv, err := console.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", c.explain(err))
		return exitError
	}
	defer srv.Close()
	running.Store(srv)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux console: listen on %s: %v\n", *addr, err)
		return exitError
	}
	// No program a node of this machine sandboxes from now on may reach the console,
	// whatever its port; one already running is turned away at accept.
	ln = sandbox.Guard(ln)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	if release, err := sandbox.Announce(port); err != nil {
		log.Warn("the programs this machine's nodes sandbox may connect to the console", "port", port, "err", err)
	} else {
		defer release()
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if link := srv.SignInLink(); link != "" {
		// The link signs its holder in as the person the console answers for, so it goes
		// only where no agent reads it: to a terminal, or into the state directory, which
		// the agents' sandbox denies, never into a log a redirection keeps.
		url := "http://" + ln.Addr().String() + link
		if isTerminal(stderr) {
			log.Info("console up", "url", url, "answering_as", "human:"+name)
		} else if path, err := writeSignInLink(ln.Addr(), url); err != nil {
			fmt.Fprintln(stderr, "agentmux console:", err)
			return exitError
		} else {
			defer os.Remove(path) // its token dies with this console
			log.Info("console up", "url", "http://"+ln.Addr().String(), "sign_in_link_in", path, "answering_as", "human:"+name)
		}
	} else if o := m.Console.OIDC; o != nil {
		log.Info("console up", "url", "http://"+ln.Addr().String(), "sign_in", o.Issuer)
	} else {
		log.Info("console up", "url", "http://"+ln.Addr().String(), "sign_in", "AGENTMUX_CONSOLE_TOKEN and a name")
	}
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "agentmux console:", err)
			return exitError
		}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), consoleShutdown)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return exitOK
}

// writeSignInLink keeps a console's sign-in link in the state directory, readable by
// its user alone (the agents' sandbox denies the directory), and returns the file.
func writeSignInLink(addr net.Addr, url string) (string, error) {
	dir, err := node.StateDir(os.Getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("the state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("console-%d.link", addr.(*net.TCPAddr).Port))
	if err := os.WriteFile(path+".tmp", []byte(url+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the sign-in link: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return "", fmt.Errorf("keep the sign-in link: %w", err)
	}
	return path, nil
}

// apiTokens reads the secrets of the manifest's [[api.tokens]] from their variables.
func apiTokens(m *config.Manifest, getenv func(string) string) ([]console.Token, error) {
	var out []console.Token
	for _, t := range m.API.Tokens {
		secret := getenv(t.TokenEnv)
		if secret == "" {
			return nil, fmt.Errorf("the API token %s reads its secret from %s, which is not set: set it (128 bits or more, e.g. `openssl rand -hex 16`), or remove the token from %s", t.Name, t.TokenEnv, m.Path)
		}
		out = append(out, console.Token{Name: t.Name, Role: t.Role, Secret: secret})
	}
	return out, nil
}
