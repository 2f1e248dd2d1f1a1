package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/internal/retry"
)

// How long a bucket is looked up or watched again while JetStream settles, and the
// waits between tries.
const (
	bucketWait     = 20 * time.Second
	bucketRetry    = 250 * time.Millisecond
	bucketRetryMax = 2 * time.Second
)

// Settled calls try until it succeeds, fails for good, ctx ends or bucketWait passes.
// While a cluster forms, or a restarted server catches up with its peers, JetStream's
// API can time out or answer "unavailable" for a moment; a node that starts then would
// otherwise fail on its first call.
func Settled(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(bucketWait)
	b := retry.Backoff{Min: bucketRetry, Max: bucketRetryMax}
	for {
		err := try()
		switch {
		case err == nil || !transient(err):
			return err
		case !time.Now().Before(deadline):
			return fmt.Errorf("%w (JetStream was unavailable for %v: is a majority of the cluster's servers up?)", err, bucketWait)
		}
		if !retry.Sleep(ctx, b.Next(0)) {
			return err
		}
	}
}

// openBucket opens a bucket a node declared; what names it in errors.
func openBucket(ctx context.Context, js jetstream.JetStream, bucket, what string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := Settled(ctx, func() (err error) {
		kv, err = js.KeyValue(ctx, bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: %s bucket %s: %w; a node declares it: is `agentmux up` running on this NATS?", what, bucket, err)
	}
	return kv, nil
}

// getJSON reads the JSON value of key into v and returns its revision; found is false,
// with no error, when there is no such key. what names the record in errors.
func getJSON(ctx context.Context, kv jetstream.KeyValue, key, what string, v any) (rev uint64, found bool, err error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: read %s %s: %w", what, key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, false, fmt.Errorf("store: %s %s is corrupt: %w", what, key, err)
	}
	return e.Revision(), true, nil
}

// scanBucket calls each with every key of bucket, its value, and when the server stored
// it, with message gets (scan): what a reader of the bus may do. Deleted and purged keys
// are left out.
func scanBucket(ctx context.Context, nc *nats.Conn, bucket string, each func(key string, value []byte, stored time.Time) error) error {
	return scanKeys(ctx, nc, bucket, ">", each)
}

// scanKeys is scanBucket of the keys keys matches (a subject's wildcards: "s-1.*").
func scanKeys(ctx context.Context, nc *nats.Conn, bucket, keys string, each func(key string, value []byte, stored time.Time) error) error {
	prefix := "$KV." + bucket + "."
	return scan(ctx, nc, "KV_"+bucket, prefix+keys, func(sm *storedMsg) error {
		m := sm.msg
		if op := m.Header.Get("KV-Operation"); op != "" {
			return nil // DEL or PURGE
		}
		key, ok := strings.CutPrefix(m.Subject, prefix)
		if !ok {
			return fmt.Errorf("bucket %s answered with a message of %q", bucket, m.Subject)
		}
		return each(key, m.Data, sm.time)
	})
}

// watchBucket hands each entry of kv, as it is now and as it changes, to each, on a
// goroutine that ends with ctx and then calls done (when set). A watch JetStream cannot
// start for the moment is tried again for up to bucketWait.
func watchBucket(ctx context.Context, kv jetstream.KeyValue, each func(jetstream.KeyValueEntry), done func()) error {
	_, err := startWatch(ctx, kv, each, nil, done)
	return err
}

// watchBucketSynced is watchBucket that calls synced, on the same goroutine, once each
// has had every entry the bucket held as the watch began, and returns after it.
func watchBucketSynced(ctx context.Context, kv jetstream.KeyValue, each func(jetstream.KeyValueEntry), synced func()) error {
	ch, err := startWatch(ctx, kv, each, synced, nil)
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchMap calls each with kv's entries by key, decoded (an entry decode returns nil
// for is left out): once with those kv holds now, before watchMap returns, then after
// each change, on a goroutine that ends with ctx. each gets a new map every time.
func watchMap[T any](ctx context.Context, kv jetstream.KeyValue, decode func(key string, value []byte) *T, each func(map[string]*T)) error {
	entries := map[string]*T{}
	synced := false
	return watchBucketSynced(ctx, kv, func(e jetstream.KeyValueEntry) {
		if v := decode(e.Key(), e.Value()); v != nil && e.Operation() == jetstream.KeyValuePut {
			entries[e.Key()] = v
		} else {
			delete(entries, e.Key())
		}
		if synced {
			each(maps.Clone(entries))
		}
	}, func() {
		synced = true
		each(maps.Clone(entries))
	})
}

// startWatch starts watchBucket's goroutine; once each has had the entries the bucket
// held as the watch began, it calls synced (when set) and closes the channel returned.
func startWatch(ctx context.Context, kv jetstream.KeyValue, each func(jetstream.KeyValueEntry), synced, done func()) (<-chan struct{}, error) {
	var w jetstream.KeyWatcher
	err := Settled(ctx, func() (err error) {
		w, err = kv.WatchAll(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go func() {
		if done != nil {
			defer done()
		}
		defer func() { _ = w.Stop() }()
		initial := true
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				switch {
				case !ok:
					return
				case e != nil:
					each(e)
				case initial: // nil marks the end of the initial values
					initial = false
					if synced != nil {
						synced()
					}
					close(ch)
				}
			}
		}
	}()
	return ch, nil
}
