package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// Promotions keeps the shadow supervisors promoted fleet-wide (wire.PromotionsBucket).
type Promotions struct {
	kv jetstream.KeyValue
}

// OpenPromotions opens the promotions bucket (a node declares it).
func OpenPromotions(ctx context.Context, js jetstream.JetStream) (*Promotions, error) {
	kv, err := openBucket(ctx, js, wire.PromotionsBucket, "promotions")
	if err != nil {
		return nil, err
	}
	return &Promotions{kv: kv}, nil
}

// Watch calls each with every promotion standing: once with those the bucket holds
// now, before Watch returns, then after each change, on a goroutine that ends with ctx.
// each gets a new map every time. A value that is not a promotion is left out.
func (p *Promotions) Watch(ctx context.Context, each func(map[string]*wire.Promotion)) error {
	if err := watchMap(ctx, p.kv, promotionOf, each); err != nil {
		return fmt.Errorf("store: watch the promotions: %w", err)
	}
	return nil
}

// promotionOf is the promotion stored under key, or nil if value is none.
func promotionOf(key string, value []byte) *wire.Promotion {
	var pr wire.Promotion
	if json.Unmarshal(value, &pr) != nil || pr.Shadow != key {
		return nil
	}
	return &pr
}

// Promote stores pr: its shadow is promoted from now on. A shadow promoted already
// is refused, naming who promoted it.
func (p *Promotions) Promote(ctx context.Context, pr *wire.Promotion) error {
	data, _ := json.Marshal(pr)
	_, err := p.kv.Create(ctx, pr.Shadow, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		var was wire.Promotion
		if _, found, rerr := getJSON(ctx, p.kv, pr.Shadow, "promotion", &was); rerr == nil && found {
			return fmt.Errorf("%s was promoted already, by %s at %s: demote it first to promote it again", pr.Shadow, was.By,
				time.UnixMilli(was.At).UTC().Format(time.RFC3339))
		}
	}
	if err != nil {
		return fmt.Errorf("store: promote %s: %w", pr.Shadow, err)
	}
	return nil
}

// Demote ends shadow's promotion, and returns it.
func (p *Promotions) Demote(ctx context.Context, shadow string) (*wire.Promotion, error) {
	var pr wire.Promotion
	rev, found, err := getJSON(ctx, p.kv, shadow, "promotion", &pr)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fmt.Errorf("%s is not promoted: nothing to demote (agentmux policy shadow lists the promoted)", shadow)
	}
	if err := p.kv.Delete(ctx, shadow, jetstream.LastRevision(rev)); err != nil {
		return nil, fmt.Errorf("store: demote %s: %w", shadow, err)
	}
	return &pr, nil
}

// ReadPromotions reads the promotions standing, by shadow, with what a reader of the
// bus may do (scanBucket).
func ReadPromotions(ctx context.Context, nc *nats.Conn) (map[string]*wire.Promotion, error) {
	out := map[string]*wire.Promotion{}
	err := scanBucket(ctx, nc, wire.PromotionsBucket, func(key string, value []byte, _ time.Time) error {
		if pr := promotionOf(key, value); pr != nil {
			out[key] = pr
		} else {
			delete(out, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the promotions: %w", err)
	}
	return out, nil
}

// PromoteShadow asks the fleet to promote (or demote) shadow in person's name (a node
// takes it: wire.ShadowPromoteSubject), and returns the node's answer.
func PromoteShadow(ctx context.Context, nc *nats.Conn, shadow, person string, req *wire.ShadowPromote) (*wire.ShadowPromoteReply, error) {
	data, _ := json.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, wire.ShadowPromoteSubject(shadow, person), data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, errors.New("no node took the promotion: is `agentmux up` running?")
		}
		return nil, err
	}
	var reply wire.ShadowPromoteReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("the node's answer is not JSON (%v): %q", err, msg.Data)
	}
	return &reply, nil
}
