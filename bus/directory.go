package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Directory knows which live nodes serve which supervisors, from the heartbeats in the
// nodes bucket, which it watches. The Asker asks it for another member when one falls
// silent: a hung or cut-off member stays in its queue group until the server drops its
// connection (minutes), and NATS prefers a queue member on the asker's own server, so
// asking the group again could reach the silent member each time.
type Directory struct {
	mu    sync.RWMutex // protects nodes
	nodes map[string]*NodeInfo
	now   func() time.Time
}

// WatchDirectory starts watching the nodes bucket until ctx ends; done is called when
// the watching goroutine has returned.
func WatchDirectory(ctx context.Context, js jetstream.JetStream, done func()) (*Directory, error) {
	kv, err := openBucket(ctx, js, NodesBucket, "node")
	if err != nil {
		return nil, err
	}
	d := &Directory{nodes: map[string]*NodeInfo{}, now: time.Now}
	if err := watchBucket(ctx, kv, d.update, done); err != nil {
		return nil, fmt.Errorf("bus: watch nodes: %w", err)
	}
	return d, nil
}

// watchBucket hands each entry of kv, as it is now and as it changes, to each, on a
// goroutine that ends with ctx and then calls done (when set). A watch JetStream cannot
// start for the moment is tried again for up to bucketWait.
func watchBucket(ctx context.Context, kv jetstream.KeyValue, each func(jetstream.KeyValueEntry), done func()) error {
	var w jetstream.KeyWatcher
	err := Settled(ctx, func() (err error) {
		w, err = kv.WatchAll(ctx)
		return err
	})
	if err != nil {
		return err
	}
	go func() {
		if done != nil {
			defer done()
		}
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil { // nil marks the end of the initial values
					each(e)
				}
			}
		}
	}()
	return nil
}

func (d *Directory) update(e jetstream.KeyValueEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(d.nodes, e.Key())
		return
	}
	var info NodeInfo
	if json.Unmarshal(e.Value(), &info) == nil {
		d.nodes[e.Key()] = &info
	}
}

// Gone reports whether node has stopped or missed its heartbeats for NodeDeadAfter; a
// node the directory never saw counts as gone once since (when something showed it
// alive) is NodeDeadAfter past.
func (d *Directory) Gone(node string, since, now time.Time) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if n, ok := d.nodes[node]; ok {
		return !n.Alive(now)
	}
	return now.Sub(since) > NodeDeadAfter
}

// Members returns the live nodes serving supervisor, by name: heartbeat recent, not
// draining or stopped.
func (d *Directory) Members(supervisor string) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	now := d.now()
	var out []string
	for name, n := range d.nodes {
		if n.Alive(now) && !n.Draining && slices.Contains(n.Supervisors, supervisor) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
