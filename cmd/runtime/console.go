package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/api"
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
	c, err := dialConsole(m, &running, log)
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
	srv, err := console.New(ctx, console.Config{Conn: c.nc, JS: c.js, Addr: *addr, Token: os.Getenv("AGENTMUX_CONSOLE_TOKEN"), Hosts: list(*public),
		Name: name, Tokens: tokens, Manifest: m, Log: log, OIDC: m.Console.OIDC, OIDCSecret: identitySecret(m)})
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", c.explain(err))
		return exitError
	}
	defer srv.Close()
	running.Store(srv)
	ln, err := listenUnsandboxed(*addr, log)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", err)
		return exitError
	}
	defer ln.release()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	forget, err := sayUp(srv, m, ln.Addr(), name, log, isTerminal(stderr))
	if err != nil {
		fmt.Fprintln(stderr, "agentmux console:", err)
		return exitError
	}
	defer forget()
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

// dialConsole connects the console to the bus, for good: it reconnects however long
// the bus is away. A refusal of the bus is told to the console running, once it is.
func dialConsole(m *config.Manifest, running *atomic.Pointer[console.Server], log *slog.Logger) (*busClient, error) {
	return dialWith("console", m, func(r *bus.PermissionError) {
		if srv := running.Load(); srv != nil {
			srv.Refused(r)
		}
		log.Warn("the bus refused the console", "err", r)
	}, nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("console disconnected from NATS; reconnecting", "err", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("console reconnected", "url", nc.ConnectedUrlRedacted()) }))
}

// identitySecret is the client secret of the manifest's identity provider, or "".
func identitySecret(m *config.Manifest) string {
	if o := m.Console.OIDC; o != nil {
		return os.Getenv(o.ClientSecretEnv)
	}
	return ""
}

// guardedListener is the console's listener, which no program a node of this machine
// sandboxes reaches; release takes back the port the sandboxes were told of.
type guardedListener struct {
	net.Listener
	release func()
}

// listenUnsandboxed listens on addr where no program a node of this machine sandboxes
// from now on may connect, whatever its port; one already running is turned away at
// accept.
func listenUnsandboxed(addr string, log *slog.Logger) (*guardedListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	g := &guardedListener{Listener: sandbox.Guard(ln), release: func() {}}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	if release, err := sandbox.Announce(port); err != nil {
		log.Warn("the programs this machine's nodes sandbox may connect to the console", "port", port, "err", err)
	} else {
		g.release = release
	}
	return g, nil
}

// sayUp logs where the console is and how people sign in. The sign-in link of a
// console without a token signs its holder in as the person it answers for, so it
// goes only where no agent reads it: to a terminal, or into the state directory,
// which the agents' sandbox denies, never into a log a redirection keeps. forget
// removes the link's file: its token dies with the console.
func sayUp(srv *console.Server, m *config.Manifest, addr net.Addr, name string, log *slog.Logger, terminal bool) (forget func(), err error) {
	base := "http://" + addr.String()
	switch link := srv.SignInLink(); {
	case link != "" && terminal:
		log.Info("console up", "url", base+link, "answering_as", "human:"+name)
	case link != "":
		path, err := writeSignInLink(addr, base+link)
		if err != nil {
			return nil, err
		}
		log.Info("console up", "url", base, "sign_in_link_in", path, "answering_as", "human:"+name)
		return func() { _ = os.Remove(path) }, nil
	case m.Console.OIDC != nil:
		log.Info("console up", "url", base, "sign_in", m.Console.OIDC.Issuer)
	default:
		log.Info("console up", "url", base, "sign_in", "AGENTMUX_CONSOLE_TOKEN and a name")
	}
	return func() {}, nil
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
func apiTokens(m *config.Manifest, getenv func(string) string) ([]api.Token, error) {
	var out []api.Token
	for _, t := range m.API.Tokens {
		secret := getenv(t.TokenEnv)
		if secret == "" {
			return nil, fmt.Errorf("the API token %s reads its secret from %s, which is not set: set it (128 bits or more, e.g. `openssl rand -hex 16`), or remove the token from %s", t.Name, t.TokenEnv, m.Path)
		}
		out = append(out, api.Token{Name: t.Name, Role: t.Role, Secret: secret})
	}
	return out, nil
}
