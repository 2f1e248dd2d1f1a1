package store

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// attachedTTL is how long a holder's record of an attached session stays after its
// last change: a node killed before it released one leaves it behind that long, and a
// request that finds it gone no-responders takes the session over.
const attachedTTL = 7 * 24 * time.Hour

// ErrHeld is returned by Holders.Claim when another node claimed the session first.
var ErrHeld = errors.New("store: another node holds the session")

// Holders records which node holds each open attached session (wire.AttachedBucket).
type Holders struct{ kv jetstream.KeyValue }

// OpenHolders opens the bucket a node declared.
func OpenHolders(ctx context.Context, js jetstream.JetStream) (*Holders, error) {
	kv, err := openBucket(ctx, js, wire.AttachedBucket, "attached sessions'")
	if err != nil {
		return nil, err
	}
	return &Holders{kv: kv}, nil
}

func holderKey(source, session string) string { return source + "." + session }

// Holder is the node that holds session of source and the record's revision, or ""
// when none does.
func (h *Holders) Holder(ctx context.Context, source, session string) (string, uint64, error) {
	e, err := h.kv.Get(ctx, holderKey(source, session))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return "", 0, nil
	case err != nil:
		return "", 0, err
	}
	return string(e.Value()), e.Revision(), nil
}

// Claim records node as the holder: a new record for rev 0, else in place of the one
// at rev (a holder that no longer answers). ErrHeld: another node got there first.
func (h *Holders) Claim(ctx context.Context, source, session, node string, rev uint64) error {
	var err error
	if rev == 0 {
		_, err = h.kv.Create(ctx, holderKey(source, session), []byte(node))
	} else {
		_, err = h.kv.Update(ctx, holderKey(source, session), []byte(node), rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || casConflict(err) {
		return ErrHeld
	}
	return err
}

// Release removes node's record of the session, if it is still node's.
func (h *Holders) Release(ctx context.Context, source, session, node string) error {
	holder, rev, err := h.Holder(ctx, source, session)
	if err != nil || holder != node {
		return err
	}
	err = h.kv.Delete(ctx, holderKey(source, session), jetstream.LastRevision(rev))
	if casConflict(err) {
		return nil // claimed by another meanwhile
	}
	return err
}
