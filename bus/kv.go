package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// How long a bucket is looked up again while a cluster forms, and how often.
const (
	bucketWait  = 20 * time.Second
	bucketRetry = 250 * time.Millisecond
)

// openBucket opens a bucket a node declared; what names it in errors.
func openBucket(ctx context.Context, js jetstream.JetStream, bucket, what string) (jetstream.KeyValue, error) {
	// While a cluster forms under load JetStream's API can time out for a moment: a
	// bucket, just declared, is looked up again for up to bucketWait.
	deadline := time.Now().Add(bucketWait)
	kv, err := js.KeyValue(ctx, bucket)
	for err != nil && transient(err) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(bucketRetry)
		kv, err = js.KeyValue(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: %s bucket %s: %w; a node declares it: is `runtime up` running on this NATS?", what, bucket, err)
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
		return 0, false, fmt.Errorf("bus: read %s %s: %w", what, key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, false, fmt.Errorf("bus: %s %s is corrupt: %w", what, key, err)
	}
	return e.Revision(), true, nil
}
