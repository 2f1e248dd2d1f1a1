package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// grantsTTL bounds how long a grant is kept: an hour for a host's, and a session's
// (which stands while its session runs) at most this.
const grantsTTL = 24 * time.Hour

// ErrNoSuchGrant is a revocation of a grant that is not standing.
var ErrNoSuchGrant = errors.New("no such grant standing")

// Grants keeps the answers people gave beyond their request (wire.Grant) in the
// grants bucket, and an index of those standing that every agent of the node reads.
type Grants struct {
	kv jetstream.KeyValue

	mu      sync.RWMutex
	byID    map[string]*wire.Grant
	byKey   map[string][]*wire.Grant // by host, type and text: what a request looks up
	revoked map[string]bool          // grants deleted since the watch began
}

func grantKey(host, typ, text string) string { return host + "\x00" + typ + "\x00" + text }

// set keeps grant in the index, in place of the one of its id; g.mu is held.
func (g *Grants) set(grant *wire.Grant) {
	g.unset(grant.ID)
	g.byID[grant.ID] = grant
	k := grantKey(grant.Host, grant.Type, grant.Text)
	g.byKey[k] = append(g.byKey[k], grant)
}

// unset drops grant id from the index; g.mu is held.
func (g *Grants) unset(id string) {
	old := g.byID[id]
	if old == nil {
		return
	}
	delete(g.byID, id)
	k := grantKey(old.Host, old.Type, old.Text)
	g.byKey[k] = slices.DeleteFunc(g.byKey[k], func(x *wire.Grant) bool { return x.ID == id })
	if len(g.byKey[k]) == 0 {
		delete(g.byKey, k)
	}
}

// OpenGrants opens the grants bucket (a node declares it) and keeps the index from it
// until ctx ends.
func OpenGrants(ctx context.Context, js jetstream.JetStream) (*Grants, error) {
	kv, err := openBucket(ctx, js, wire.GrantsBucket, "grants")
	if err != nil {
		return nil, err
	}
	g := newGrants(kv)
	err = watchBucket(ctx, kv, func(e jetstream.KeyValueEntry) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if e.Operation() != jetstream.KeyValuePut {
			g.unset(e.Key())
			g.revoked[e.Key()] = true
			return
		}
		var grant wire.Grant
		if json.Unmarshal(e.Value(), &grant) == nil && grant.ID == e.Key() {
			g.set(&grant)
		}
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("store: watch the grants: %w", err)
	}
	return g, nil
}

func newGrants(kv jetstream.KeyValue) *Grants {
	return &Grants{kv: kv, byID: map[string]*wire.Grant{}, byKey: map[string][]*wire.Grant{}, revoked: map[string]bool{}}
}

// Put stores a grant.
func (g *Grants) Put(ctx context.Context, grant *wire.Grant) error {
	data, _ := json.Marshal(grant)
	if _, err := g.kv.Put(ctx, grant.ID, data); err != nil {
		return fmt.Errorf("store: write grant %s: %w", grant.ID, err)
	}
	g.mu.Lock()
	g.set(grant) // this node applies it at once
	g.mu.Unlock()
	return nil
}

// Revoke removes grant id, and returns it.
func (g *Grants) Revoke(ctx context.Context, id string) (*wire.Grant, error) {
	var grant wire.Grant
	_, found, err := getJSON(ctx, g.kv, id, "grant", &grant)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fmt.Errorf("%w: %s", ErrNoSuchGrant, id)
	}
	if err := g.kv.Delete(ctx, id); err != nil {
		return nil, fmt.Errorf("store: revoke grant %s: %w", id, err)
	}
	g.mu.Lock()
	g.unset(id)
	g.revoked[id] = true
	g.mu.Unlock()
	return &grant, nil
}

// EndSession removes the grants that stood for session, which has ended: a session's
// grant stands for the rest of its session only.
func (g *Grants) EndSession(ctx context.Context, session string) error {
	g.mu.RLock()
	var ids []string
	for id, grant := range g.byID {
		if grant.Scope == wire.ScopeSession && grant.Session == session {
			ids = append(ids, id)
		}
	}
	g.mu.RUnlock()
	for _, id := range ids {
		if err := g.kv.Delete(ctx, id); err != nil {
			return fmt.Errorf("store: remove grant %s of ended session %s: %w", id, session, err)
		}
		g.mu.Lock()
		g.unset(id)
		g.mu.Unlock()
	}
	return nil
}

// Find returns the grant that answers a request of typ with text from session of
// host at now, or nil.
func (g *Grants) Find(host, session, typ, text string, now time.Time) *wire.Grant {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if len(g.byKey) == 0 {
		return nil // the common case: no key made
	}
	for _, grant := range g.byKey[grantKey(host, typ, text)] {
		if grant.Covers(host, session, typ, text, now) {
			return grant
		}
	}
	return nil
}

// Revoked reports whether grant id was revoked.
func (g *Grants) Revoked(id string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.revoked[id]
}

// Standing lists the grants standing at now, oldest first.
func (g *Grants) Standing(now time.Time) []*wire.Grant {
	g.mu.RLock()
	out := make([]*wire.Grant, 0, len(g.byID))
	for _, grant := range g.byID {
		if grant.Expires.IsZero() || now.Before(grant.Expires) {
			out = append(out, grant)
		}
	}
	g.mu.RUnlock()
	slices.SortFunc(out, func(a, b *wire.Grant) int { return a.Created.Compare(b.Created) })
	return out
}
