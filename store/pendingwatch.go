package store

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go"
)

// pendingRescan is how often Watch reads the whole bucket again, so that a change made
// while its connection was down (a node restarting) is shown this late at most.
const pendingRescan = 15 * time.Second

// Watch calls each with every request in the bucket, then with each change, until ctx
// ends: what the console shows. It needs no consumer (scan): it reads the bucket with
// message gets, and a write it sees on the bucket's subjects only tells it which request
// to read again, so nothing but the bucket itself decides what each is called with.
func (s *PendingStore) Watch(ctx context.Context, each func(*wire.PendingRequest)) error {
	w := &pendingWatch{store: s, each: each, dirty: map[string]struct{}{}, kick: make(chan struct{}, 1)}
	sub, err := s.nc.Subscribe(wire.PendingSubjects, func(m *nats.Msg) {
		if id, ok := strings.CutPrefix(m.Subject, wire.PendingKeys); ok && wire.IsName(id) {
			w.mark(id)
		}
	})
	if err != nil {
		return err
	}
	if err := w.rescan(ctx); err != nil {
		_ = sub.Unsubscribe()
		return err
	}
	go w.run(ctx, sub)
	return nil
}

// pendingWatch is one Watch: the requests written since it last read them, and the
// goroutine that reads them.
type pendingWatch struct {
	store *PendingStore
	each  func(*wire.PendingRequest)
	mu    sync.Mutex          // protects dirty
	dirty map[string]struct{} // requests written since they were last read
	kick  chan struct{}       // something is dirty
}

func (w *pendingWatch) mark(id string) {
	w.mu.Lock()
	w.dirty[id] = struct{}{}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run reads what was written and, now and then, the whole bucket, until ctx ends. Reads
// happen one at a time, so each sees a request no older than the read before.
func (w *pendingWatch) run(ctx context.Context, sub *nats.Subscription) {
	defer func() { _ = sub.Unsubscribe() }()
	t := time.NewTicker(pendingRescan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = w.rescan(ctx) // the next tick tries again
		case <-w.kick:
			w.mu.Lock()
			ids := w.dirty
			w.dirty = map[string]struct{}{}
			w.mu.Unlock()
			for id := range ids {
				w.read(ctx, id)
			}
		}
	}
}

func (w *pendingWatch) read(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(ctx, respondTimeout)
	defer cancel()
	// A request gone (purged) has nothing to show; one not read now is read by the
	// next rescan.
	if p, _, err := w.store.Get(rctx, id); err == nil {
		w.each(p)
	}
}

func (w *pendingWatch) rescan(ctx context.Context) error {
	return scanBucket(ctx, w.store.nc, wire.PendingBucket, func(id string, value []byte, _ time.Time) error {
		var p wire.PendingRequest
		if json.Unmarshal(value, &p) == nil {
			w.each(&p)
		}
		return nil
	})
}
