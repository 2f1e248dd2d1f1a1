package bus

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/nats-io/nuid"
)

// Defaults for the embedded server and the connection.
const (
	defaultMaxPayload    = 8 << 20 // events carry lines of up to max_line_bytes
	defaultReconnectWait = 250 * time.Millisecond
	defaultReconnectBuf  = 64 << 20
	defaultDrainTimeout  = 5 * time.Second
	tlsTimeout           = 5 * time.Second
)

// nodeSelf is the user a node connects to its own embedded server as: not a name
// [[nats.users]] may hold.
const nodeSelf = "$agentmux-node"

var (
	// ErrNotReady is returned when the embedded server did not start accepting clients.
	ErrNotReady = errors.New("bus: embedded NATS server did not become ready")
)

// Config says which NATS to use. With an empty URL an embedded server is started.
type Config struct {
	URL      string   // external server or cluster, e.g. nats://10.0.0.1:4222,nats://10.0.0.2:4222
	Identity Identity // who this node is on URL
	TLS      *TLS     // the embedded server's certificate; what URL's clients trust
	// Users the embedded server lets in (then no anonymous client); the node itself
	// connects as a node user of its own.
	Users  []User
	Listen string // embedded server's client listener; port 0 picks a free port
	// StateDir is where the embedded server, when Users is empty, writes the local
	// operator's credential (LocalCredentials) for the CLI on this machine; empty: it
	// writes none, and only the node itself gets in.
	StateDir string
	StoreDir string // embedded server's JetStream store; empty: a temporary directory removed on Close
	Name     string // connection name, shown by the server

	// ServerName names the embedded server (needed in a cluster); Cluster, when set,
	// makes it one server of a NATS cluster.
	ServerName string
	Cluster    *ClusterConfig
	// SyncAlways makes the embedded server fsync every JetStream write; else it syncs
	// every SyncInterval (0: the server's default, 2 minutes).
	SyncAlways   bool
	SyncInterval time.Duration

	OnDisconnect func(error) // called from NATS goroutines; must not block
	OnReconnect  func()
	OnAsyncError func(error) // slow consumers and other asynchronous errors
}

// ClusterConfig makes the embedded server one of a NATS cluster.
type ClusterConfig struct {
	Name   string   // the same on every server
	Listen string   // host:port for routes from the other servers
	Routes []string // nats://host:port of the other servers' cluster listeners
	// User and Password authenticate the routes, the same on every server.
	User, Password string
}

// Bus is one process's NATS: connection, JetStream, and the embedded server if any.
type Bus struct {
	Conn *nats.Conn
	JS   jetstream.JetStream

	log     *slog.Logger
	srv     *server.Server // nil when connected to an external server
	tempDir string         // removed on Close
	local   string         // the file holding the local operator's credential

	mu        sync.Mutex // protects reconnect
	reconnect []func()   // AfterReconnect's

	closeOnce sync.Once
}

// Open starts or connects to NATS. It declares nothing: store.Declare declares the
// streams and buckets.
func Open(cfg Config, log *slog.Logger) (*Bus, error) {
	b := &Bus{log: log}
	url, id := cfg.URL, cfg.Identity
	var opts []nats.Option
	if url == "" {
		self, err := b.startServer(cfg)
		if err != nil {
			return nil, err
		}
		url, id = b.srv.ClientURL(), self
		// Only its own server knows the node's own user. The node reaches it in
		// process: no socket, no system call per write, and no TLS to its own
		// listener whatever names its certificate has. Against loopback TCP it costs
		// a third less CPU per request and halves the median round trip (loadgen,
		// 1,000 sessions at 500/s: p50 0.95 ms vs 2.0 ms; bench/RESULTS.md).
		opts = append(opts, nats.IgnoreDiscoveredServers(), nats.InProcessServer(b.srv))
		url = strings.Replace(url, "tls://", "nats://", 1) // a tls:// URL would ask for TLS anyway
	} else {
		opts = append(opts, cfg.TLS.clientOptions()...)
	}
	idOpts, err := id.options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, idOpts...)
	opts = append(opts,
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(defaultReconnectWait),
		nats.ReconnectBufSize(defaultReconnectBuf),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if cfg.OnDisconnect != nil {
				cfg.OnDisconnect(err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			b.mu.Lock()
			after := b.reconnect
			b.mu.Unlock()
			for _, f := range after {
				f()
			}
			if cfg.OnReconnect != nil {
				cfg.OnReconnect()
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("nats asynchronous error", "err", err)
			if cfg.OnAsyncError != nil {
				cfg.OnAsyncError(err)
			}
		}),
	)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		b.Close()
		return nil, connectError(url, id, err, "check [nats] url or that the server is running")
	}
	b.Conn = nc
	js, err := jetstream.New(nc)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	b.JS = js
	return b, nil
}

// AfterReconnect has f called, on a NATS goroutine, each time the connection is back
// after a loss (an ask.Asker asks its open asks again). f must not block.
func (b *Bus) AfterReconnect(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reconnect = append(b.reconnect[:len(b.reconnect):len(b.reconnect)], f)
}

// Client is how a CLI command reaches a node's NATS.
type Client struct {
	URL      string
	Name     string // connection name, shown by the server
	Identity Identity
	TLS      *TLS
	// User is the name the bus knows Identity by; its replies arrive on its own inbox
	// (InboxPrefix), the only one its permissions let it read.
	User string
	// OnRefusal is called (from a NATS goroutine) when the server refuses a publish or
	// subscription, so a command can stop waiting for a reply that cannot come.
	OnRefusal func(*PermissionError)
}

// Connect connects a CLI client to an existing node's NATS without declaring anything.
func Connect(c Client, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := c.Identity.options()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name(c.Name))
	opts = append(opts, c.TLS.clientOptions()...)
	if c.User != "" {
		opts = append(opts, nats.CustomInboxPrefix(wire.InboxPrefix(c.User)))
	}
	if c.OnRefusal != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if r := Refusal(err, c.User); r != nil {
				c.OnRefusal(r)
			}
		}))
	}
	nc, err := nats.Connect(c.URL, append(opts, extra...)...)
	if err != nil {
		return nil, connectError(c.URL, c.Identity, err, "is `agentmux up` running, and does [nats] say where?")
	}
	return nc, nil
}

// startServer starts the embedded server and returns the identity the node connects
// to it with: a node user of its own, whose password only this process knows. With no
// users it also writes the local operator's credential to cfg.StateDir (local.go).
func (b *Bus) startServer(cfg Config) (Identity, error) {
	dir := cfg.StoreDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "agentmux-nats-")
		if err != nil {
			return Identity{}, fmt.Errorf("bus: temporary JetStream store: %w", err)
		}
		dir, b.tempDir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return Identity{}, fmt.Errorf("bus: JetStream store %s: %w", dir, err)
	}
	opts, self, err := serverOptions(cfg, dir)
	if err != nil {
		b.removeTemp()
		return Identity{}, err
	}
	var local nkeys.KeyPair
	if len(cfg.Users) == 0 && cfg.StateDir != "" {
		if local, err = localOperator(opts, cfg.StateDir); err != nil {
			b.removeTemp()
			return Identity{}, err
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		b.removeTemp()
		return Identity{}, fmt.Errorf("bus: embedded NATS server: %w", err)
	}
	serverLog := newServerLog(b.log)
	srv.SetLogger(serverLog, false, false)
	srv.Start()
	if err := ready(srv, serverLog); err != nil {
		srv.Shutdown()
		b.removeTemp()
		return Identity{}, err
	}
	b.srv = srv
	if local != nil {
		port := srv.Addr().(*net.TCPAddr).Port
		if b.local, err = writeLocalCredentials(local, cfg.StateDir, port); err != nil {
			srv.Shutdown()
			b.removeTemp()
			return Identity{}, err
		}
	}
	return self, nil
}

// serverOptions are the embedded server's: listener, store, users, TLS and cluster.
func serverOptions(cfg Config, dir string) (*server.Options, Identity, error) {
	var self Identity
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, self, err
	}
	opts := &server.Options{
		ServerName:   cfg.ServerName,
		Host:         host,
		Port:         port,
		JetStream:    true,
		StoreDir:     dir,
		MaxPayload:   defaultMaxPayload,
		SyncAlways:   cfg.SyncAlways,
		SyncInterval: cfg.SyncInterval,
		NoSigs:       true,
		NoLog:        true,
	}
	if opts.ServerName == "" {
		opts.ServerName = cfg.Name
	}
	// The node's own user, always: no client gets in anonymously, on loopback too.
	self = Identity{User: nodeSelf, Password: nuid.Next() + nuid.Next()}
	users := append(slices.Clone(cfg.Users), User{Name: self.User, Password: self.Password, Role: RoleNode})
	if err := serverAuth(opts, users); err != nil {
		return nil, self, err
	}
	if t := cfg.TLS; t != nil {
		if opts.TLSConfig, err = t.serverConfig(); err != nil {
			return nil, self, err
		}
		opts.TLSVerify, opts.TLSTimeout = t.Verify, tlsTimeout.Seconds()
	}
	if err := clusterOptions(opts, cfg.Cluster, cfg.TLS); err != nil {
		return nil, self, err
	}
	return opts, self, nil
}

// clusterOptions sets the embedded server's cluster listener and routes.
// With TLS the routes use the server's certificate and verify each other's; with a
// user they authenticate with it.
func clusterOptions(opts *server.Options, c *ClusterConfig, t *TLS) error {
	if c == nil {
		return nil
	}
	host, port, err := splitListen(c.Listen)
	if err != nil {
		return fmt.Errorf("bus: [nats.cluster] listen: %w", err)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port, Username: c.User, Password: c.Password}
	if t != nil {
		cfg, err := t.serverConfig()
		if err != nil {
			return err
		}
		// A route is client and server at once: servers verify each other's
		// certificates against the CA both ways, whatever verify says of clients.
		if cfg.ClientCAs != nil {
			cfg.RootCAs, cfg.ClientAuth = cfg.ClientCAs, tls.RequireAndVerifyClientCert
		}
		opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = cfg, tlsTimeout.Seconds()
	}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return fmt.Errorf("bus: [nats.cluster] route %q: %w", r, err)
		}
		if c.User != "" && u.User == nil {
			u.User = url.UserPassword(c.User, c.Password)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

func splitListen(listen string) (string, int, error) {
	if listen == "" {
		return "127.0.0.1", server.RANDOM_PORT, nil
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("bus: [nats] listen %q: %w; use host:port, e.g. 127.0.0.1:4222", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bus: [nats] listen %q: bad port; use 0 for any free port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// ClientURL is the URL CLI commands use to reach this bus.
func (b *Bus) ClientURL() string {
	if b.srv != nil {
		return b.srv.ClientURL()
	}
	return b.Conn.ConnectedUrl()
}

// LocalOperator is the file holding the local operator's credential, or "" when this
// bus wrote none.
func (b *Bus) LocalOperator() string { return b.local }

// Server is the embedded server, or nil.
func (b *Bus) Server() *server.Server { return b.srv }

// Close drains the connection and stops the embedded server. It is idempotent and
// nil-safe.
func (b *Bus) Close() {
	if b == nil {
		return
	}
	b.closeOnce.Do(func() {
		if b.Conn != nil {
			done := make(chan struct{})
			b.Conn.SetClosedHandler(func(*nats.Conn) { close(done) })
			if err := b.Conn.Drain(); err != nil {
				b.Conn.Close()
			} else {
				select {
				case <-done:
				case <-time.After(defaultDrainTimeout):
					b.Conn.Close()
				}
			}
		}
		if b.srv != nil {
			b.srv.Shutdown()
			b.srv.WaitForShutdown()
		}
		b.removeTemp()
	})
}

func (b *Bus) removeTemp() {
	if b.tempDir != "" {
		if err := os.RemoveAll(b.tempDir); err != nil {
			b.log.Warn("remove temporary JetStream store", "dir", b.tempDir, "err", err)
		}
	}
}
