package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// Checkpoints keeps sessions' checkpoints: their parts as one entry of the data bucket
// when they fit in a message, else as one object of the checkpoint bucket, each listed
// in the index. Nodes alone write and read them: a part may hold what an agent knows
// (its state, its transcript), secrets included.
type Checkpoints struct {
	nc   *nats.Conn
	data jetstream.KeyValue
	obj  jetstream.ObjectStore
	idx  jetstream.KeyValue
	keep int // the latest of each session kept
	// entryMax is the most a checkpoint's parts may weigh to be one entry of data: one
	// publish, where an object is four requests (its info, its chunks, its metadata,
	// the purge of the chunks it replaces).
	entryMax int
}

// checkpointEntryMax caps a checkpoint kept as one message, below the server's
// max_payload (less room for the publish's headers).
const (
	checkpointEntryMax = 1 << 20
	publishHeadroom    = 4 << 10
)

// ErrNoCheckpoint is a session, or a seq of one, with no checkpoint.
var ErrNoCheckpoint = errors.New("store: no such checkpoint")

// OpenCheckpoints opens the declared checkpoint bucket and index, keeping the latest
// keep checkpoints of each session.
func OpenCheckpoints(ctx context.Context, js jetstream.JetStream, keep int) (*Checkpoints, error) {
	obj, err := js.ObjectStore(ctx, wire.CheckpointBucket)
	if err != nil {
		return nil, fmt.Errorf("store: open the checkpoints: %w", err)
	}
	data, err := js.KeyValue(ctx, wire.CheckpointDataBucket)
	if err != nil {
		return nil, fmt.Errorf("store: open the checkpoints' data: %w", err)
	}
	idx, err := js.KeyValue(ctx, wire.CheckpointIndexBucket)
	if err != nil {
		return nil, fmt.Errorf("store: open the checkpoints' index: %w", err)
	}
	nc := js.Conn()
	return &Checkpoints{nc: nc, data: data, obj: obj, idx: idx, keep: max(keep, 1),
		entryMax: min(checkpointEntryMax, int(nc.MaxPayload())-publishHeadroom)}, nil
}

// Put records checkpoint c of its session with its parts (by name), then lists it, in
// its slot (wire.CheckpointSlot): the session's checkpoint that falls out of the latest
// keep is replaced by the writes. c's Parts and Bytes are filled from parts. The parts
// are written one after another in the order c.Parts lists them, as one entry of the
// data bucket when they fit in a message (c.Entry), else as one object (c.Object): a
// small checkpoint is two publishes. A slot's entry and object are each replaced by the
// next write of their kind; a session whose checkpoints change kind keeps at most one
// stale copy per slot, until max_age.
func (s *Checkpoints) Put(ctx context.Context, c *wire.Checkpoint, parts map[string][]byte) error {
	c.Parts, c.Bytes = nil, 0
	size := 0
	for _, data := range parts {
		size += len(data)
	}
	body := make([]byte, 0, size)
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		data := parts[name]
		sum := sha256.Sum256(data)
		c.Parts = append(c.Parts, wire.CheckpointPart{Name: name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
		c.Bytes += int64(len(data))
		body = append(body, data...)
	}
	slot := wire.CheckpointSlot(c.Seq, s.keep)
	c.Entry, c.Object = "", ""
	var err error
	if len(body) <= s.entryMax {
		c.Entry = wire.CheckpointKey(c.Session, slot)
		_, err = s.data.Put(ctx, c.Entry, body)
	} else {
		c.Object = wire.CheckpointObject(c.Session, slot)
		_, err = s.obj.PutBytes(ctx, c.Object, body)
	}
	if err != nil {
		return fmt.Errorf("store: write checkpoint %d of session %s: %w", c.Seq, c.Session, err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := s.idx.Put(ctx, wire.CheckpointKey(c.Session, slot), data); err != nil {
		return fmt.Errorf("store: list checkpoint %d of session %s: %w", c.Seq, c.Session, err)
	}
	return nil
}

// list is the session's checkpoints, oldest first.
func (s *Checkpoints) list(ctx context.Context, session string) ([]*wire.Checkpoint, error) {
	return ListCheckpoints(ctx, s.nc, session)
}

// Find is the session's checkpoint seq, or its latest with seq 0; ErrNoCheckpoint when
// there is none.
func (s *Checkpoints) Find(ctx context.Context, session string, seq int) (*wire.Checkpoint, error) {
	all, err := s.list(ctx, session)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if seq == 0 || all[i].Seq == seq {
			return all[i], nil
		}
	}
	return nil, fmt.Errorf("%w: session %s, seq %d (0: its latest)", ErrNoCheckpoint, session, seq)
}

// Part reads part name of checkpoint c, checked against the SHA-256 it was listed with.
func (s *Checkpoints) Part(ctx context.Context, c *wire.Checkpoint, name string) ([]byte, error) {
	if !slices.ContainsFunc(c.Parts, func(p wire.CheckpointPart) bool { return p.Name == name }) {
		return nil, fmt.Errorf("%w: checkpoint %d of session %s has no part %q", ErrNoCheckpoint, c.Seq, c.Session, name)
	}
	parts, err := s.Parts(ctx, c)
	if err != nil {
		return nil, err
	}
	return parts[name], nil
}

// Parts reads checkpoint c's parts, each checked against the SHA-256 it was listed with.
func (s *Checkpoints) Parts(ctx context.Context, c *wire.Checkpoint) (map[string][]byte, error) {
	data, err := s.read(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("store: read checkpoint %d of session %s: %w", c.Seq, c.Session, err)
	}
	if int64(len(data)) != c.Bytes {
		return nil, fmt.Errorf("store: checkpoint %d of session %s is %d bytes, not the %d it was listed with", c.Seq, c.Session, len(data), c.Bytes)
	}
	parts := make(map[string][]byte, len(c.Parts))
	for _, p := range c.Parts {
		part := data[:p.Bytes:p.Bytes]
		data = data[p.Bytes:]
		if sum := sha256.Sum256(part); hex.EncodeToString(sum[:]) != p.SHA256 {
			return nil, fmt.Errorf("store: part %s of checkpoint %d of session %s is not what was written (its SHA-256 differs)", p.Name, c.Seq, c.Session)
		}
		parts[p.Name] = part
	}
	return parts, nil
}

// read is checkpoint c's parts together, from its entry or its object.
func (s *Checkpoints) read(ctx context.Context, c *wire.Checkpoint) ([]byte, error) {
	if c.Entry == "" {
		return s.obj.GetBytes(ctx, c.Object)
	}
	e, err := s.data.Get(ctx, c.Entry)
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// ListCheckpoints lists a session's checkpoints, oldest first, from the index, with
// message gets: what a reader of the bus may do.
func ListCheckpoints(ctx context.Context, nc *nats.Conn, session string) ([]*wire.Checkpoint, error) {
	var out []*wire.Checkpoint
	err := scanKeys(ctx, nc, wire.CheckpointIndexBucket, session+".*", func(key string, value []byte, _ time.Time) error {
		var c wire.Checkpoint
		if err := json.Unmarshal(value, &c); err != nil {
			return fmt.Errorf("store: checkpoint %s is corrupt: %w", key, err)
		}
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list the checkpoints of session %s: %w", session, err)
	}
	slices.SortFunc(out, func(a, b *wire.Checkpoint) int { return a.Seq - b.Seq })
	return out, nil
}
