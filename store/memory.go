package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/wire"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	memoryTTL        = 24 * time.Hour // a day after a session's last exchange
	memoryMaxText    = 8 << 10        // per side of an exchange; longer text is cut
	memoryCASRetries = 5              // concurrent writers of one session's memory
)

// Memory is the decide.Memory interface in a KV bucket, so that whichever member of an llm supervisor
// answers a session's next request sees its earlier exchanges.
type Memory struct {
	kv jetstream.KeyValue
}

// OpenMemory opens the memory bucket a node declared.
func OpenMemory(ctx context.Context, js jetstream.JetStream) (*Memory, error) {
	kv, err := openBucket(ctx, js, wire.MemoryBucket, "memory")
	if err != nil {
		return nil, err
	}
	return &Memory{kv: kv}, nil
}

func memoryKey(supervisor, session string) string { return supervisor + "." + session }

// History implements the decide.Memory interface.
func (m *Memory) History(ctx context.Context, supervisor, session string) ([]wire.Exchange, error) {
	xs, _, err := m.read(ctx, memoryKey(supervisor, session))
	return xs, err
}

func (m *Memory) read(ctx context.Context, key string) ([]wire.Exchange, uint64, error) {
	var xs []wire.Exchange
	rev, _, err := getJSON(ctx, m.kv, key, "memory", &xs)
	return xs, rev, err
}

// Remember implements the decide.Memory interface: it appends x with a compare-and-set, keeping the
// latest MemoryTurns exchanges.
func (m *Memory) Remember(ctx context.Context, supervisor, session string, x wire.Exchange) error {
	key := memoryKey(supervisor, session)
	x.User, x.Assistant = cut(x.User, memoryMaxText), cut(x.Assistant, memoryMaxText)
	for range memoryCASRetries {
		xs, rev, err := m.read(ctx, key)
		if err != nil {
			return err
		}
		xs = append(xs, x)
		if len(xs) > wire.MemoryTurns {
			xs = xs[len(xs)-wire.MemoryTurns:]
		}
		data, _ := json.Marshal(xs)
		if rev == 0 {
			_, err = m.kv.Create(ctx, key, data)
		} else {
			_, err = m.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return nil
		}
		if !casConflict(err) && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("store: write memory %s: %w", key, err)
		}
	}
	return fmt.Errorf("store: write memory %s: %d writers raced for it", key, memoryCASRetries)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
