package node

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/bus"
	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/retry"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/store"
)

// openBus starts or connects to NATS and declares the streams and buckets.
func (n *Node) openBus(ctx context.Context, opts Options) error {
	m, nc, getenv := opts.Manifest, opts.Manifest.NATS, getenv(opts)
	var (
		users []bus.User
		id    bus.Identity
		err   error
	)
	if nc.URL == "" {
		users, err = Users(m, getenv)
	} else {
		// An external server's users are its own (`agentmux nats-auth` writes them).
		id, err = Identity(m, getenv)
	}
	if err != nil {
		return err
	}
	bcfg := bus.Config{URL: nc.URL, Identity: id, TLS: TLS(m), Users: users, Listen: nc.Listen, StoreDir: nc.StoreDir, Name: "agentmux-" + n.Name,
		ServerName: nc.ServerName, SyncAlways: nc.SyncAlways, SyncInterval: nc.SyncEvery.D(),
		OnDisconnect: func(error) { n.Metrics.NATSDisconnects.Inc() },
		OnReconnect:  func() { n.Metrics.NATSReconnects.Inc() },
		OnAsyncError: func(err error) {
			n.Metrics.NATSAsyncErrors.Inc()
			if errors.Is(err, nats.ErrSlowConsumer) {
				n.Metrics.SlowConsumers.Inc()
			}
		}}
	if c := nc.Cluster; c != nil {
		bcfg.Cluster = &bus.ClusterConfig{Name: c.Name, Listen: c.Listen, Routes: c.Routes, User: c.User}
		if c.PasswordEnv != "" {
			if bcfg.Cluster.Password = getenv(c.PasswordEnv); bcfg.Cluster.Password == "" {
				return errors.New("node: " + unsetRoutePassword(c.PasswordEnv))
			}
		}
	}
	switch {
	case opts.Ephemeral && nc.URL == "":
		bcfg.Listen, bcfg.StoreDir, bcfg.Cluster = "127.0.0.1:0", "", nil
	case nc.URL == "":
		bcfg.StoreDir = n.storeDir(opts)
		if len(users) == 0 {
			// No [[nats.users]]: the CLI on this machine connects as the local operator.
			bcfg.StateDir = opts.StateDir
		}
	}
	b, err := bus.Open(bcfg, n.log)
	if err != nil {
		return err
	}
	n.Bus = b
	if n.conf.replicas, err = store.Declare(ctx, b.JS, nc.Replicas, keep(m.Audit, m.Checkpoints), n.log); err != nil {
		b.Close()
		return err
	}
	if srv := b.Server(); srv != nil {
		n.Metrics.WatchServer(func() metrics.ServerStats {
			v, err := srv.Varz(nil)
			if err != nil {
				return metrics.ServerStats{}
			}
			return metrics.ServerStats{Connections: v.Connections, Subscriptions: int(v.Subscriptions), InMsgs: v.InMsgs, OutMsgs: v.OutMsgs,
				InBytes: v.InBytes, OutBytes: v.OutBytes, SlowConsumers: v.SlowConsumers, Memory: v.Mem}
		})
	}
	return nil
}

// startAsker starts the node's Asker, which asks again after a reconnect, and the
// directory of live supervisor members its re-asks go to, watching the nodes bucket.
func (n *Node) Replicas() int { return n.conf.replicas }

// storeDir is where a node's embedded server keeps its store: [nats] store_dir, else the
// node's own folder of its state directory, so that the audit, the queued tasks and the
// people's pending requests outlive a restart. A temporary store (MemoryStore, or no
// state directory) is "" and said to be one.
func (n *Node) storeDir(opts Options) string {
	dir := storeFolder(opts, n.Name)
	switch {
	case dir != "":
		return dir
	case opts.Manifest.NATS.StoreDir == config.MemoryStore:
		n.log.Warn("[nats] store_dir = \":memory:\": this node keeps its store in a temporary directory; the audit, queued tasks and pending requests are gone when it stops")
	default:
		n.log.Warn("no state directory and no [nats] store_dir: this node keeps its store in a temporary directory; the audit, queued tasks and pending requests are gone when it stops")
	}
	return ""
}

// storeFolder is the folder of the store a node named name keeps, or "" when its store
// is temporary or another's (a node that connects to a server it does not run).
func storeFolder(opts Options, name string) string {
	dir := opts.Manifest.NATS.StoreDir
	switch {
	case opts.Ephemeral || opts.Manifest.NATS.URL != "" || dir == config.MemoryStore:
		return ""
	case dir != "":
		return dir
	case opts.StateDir != "":
		return filepath.Join(opts.StateDir, name, "nats")
	}
	return ""
}

// keep is the history [audit] and [checkpoints] ask the fleet to keep.
func keep(a config.Audit, c config.Checkpoints) store.Keep {
	k := store.Keep{Audit: store.Retention{MaxAge: a.MaxAge.D(), MaxBytes: a.MaxBytes},
		Checkpoints: store.Retention{MaxAge: c.MaxAge.D(), MaxBytes: c.MaxBytes}}
	if a.KeepEvents {
		k.Events = &store.Retention{MaxAge: a.EventsMaxAge.D(), MaxBytes: a.EventsMaxBytes}
	}
	return k
}

// declaredWait is how long a bucket this node has just declared may read as not found:
// a forming cluster's servers learn of it one after another.
const declaredWait = 30 * time.Second

// openDeclared opens a bucket this node has just declared, trying again while the
// server it asks does not know of it yet.
func openDeclared[T any](ctx context.Context, open func() (T, error)) (T, error) {
	deadline := time.Now().Add(declaredWait)
	pace := retry.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for {
		v, err := open()
		if err == nil || !errors.Is(err, jetstream.ErrBucketNotFound) || time.Now().After(deadline) || !retry.Sleep(ctx, pace.Next(0)) {
			return v, err
		}
	}
}
