package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// spendTTL is how long a day's spend is kept after its last session.
const spendTTL = 400 * 24 * time.Hour

// spendTries bounds the compare-and-set rounds of one addition: nodes ending sessions
// of the same host at once take turns.
const spendTries = 20

// SpendStore adds ended sessions' spend to the fleet's daily totals.
type SpendStore struct {
	kv jetstream.KeyValue
}

// OpenSpend opens the daily-spend bucket a node declared.
func OpenSpend(ctx context.Context, js jetstream.JetStream) (*SpendStore, error) {
	kv, err := openBucket(ctx, js, wire.SpendBucket, "spend")
	if err != nil {
		return nil, err
	}
	return &SpendStore{kv: kv}, nil
}

// Add counts a session of host that ended at end, spending s, in its day's total: read,
// added to, and written back only if no other node wrote it meanwhile, else again.
func (st *SpendStore) Add(ctx context.Context, host string, end time.Time, s *wire.Spend) error {
	key := wire.SpendKey(end, host)
	for range spendTries {
		day := wire.DailySpend{Day: end.UTC().Format(time.DateOnly), Host: host}
		rev, _, err := getJSON(ctx, st.kv, key, "daily spend", &day)
		if err != nil {
			return err
		}
		day.Add(s)
		data, _ := json.Marshal(&day)
		if rev == 0 {
			_, err = st.kv.Create(ctx, key, data)
		} else {
			_, err = st.kv.Update(ctx, key, data, rev)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists) || casConflict(err):
			continue // another node counted a session first
		default:
			return fmt.Errorf("store: add to %s's spend of %s: %w", host, day.Day, err)
		}
	}
	return fmt.Errorf("store: add to %s's spend: %d other writes came first; the session's spend is in its audit record", host, spendTries)
}

// ReadSpend is every host's daily spend since since (UTC days), oldest first, as a
// reader of the bus reads a bucket.
func ReadSpend(ctx context.Context, nc *nats.Conn, since time.Time) ([]*wire.DailySpend, error) {
	from := since.UTC().Format(time.DateOnly)
	var out []*wire.DailySpend
	err := scanBucket(ctx, nc, wire.SpendBucket, func(key string, value []byte, _ time.Time) error {
		if key < from {
			return nil
		}
		var d wire.DailySpend
		if err := json.Unmarshal(value, &d); err != nil {
			return fmt.Errorf("store: daily spend %s is corrupt: %w", key, err)
		}
		out = append(out, &d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the daily spend: %w", err)
	}
	slices.SortFunc(out, func(a, b *wire.DailySpend) int {
		if c := strings.Compare(a.Day, b.Day); c != 0 {
			return c
		}
		return strings.Compare(a.Host, b.Host)
	})
	return out, nil
}
