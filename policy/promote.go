package policy

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// Bar is what a shadow supervisor's record must show before it is promoted to decide
// the routes it shadows: answers to at least MinDecided requests, agreeing with the
// answers given on at least MinAgreement of them, with no answer on at most
// 1 - MinAgreement of the requests it was asked, and not one approval a person denied.
type Bar struct {
	MinAgreement float64
	MinDecided   int
}

// The bar of `agentmux policy promote` and the console, unless told otherwise.
const (
	DefaultMinAgreement = 0.95
	DefaultMinDecided   = 50
)

// Check says why t falls short of the bar; nil when it clears it.
func (b Bar) Check(t ShadowTally) error {
	answered := t.Agreed + t.Disagreed
	switch {
	case t.PersonDenied > 0:
		return fmt.Errorf("%s would have allowed %d approvals a person denied: agentmux policy shadow lists its disagreements", t.Supervisor, t.PersonDenied)
	case answered < b.MinDecided:
		return fmt.Errorf("%s answered %d requests, under the %d a promotion needs: let it shadow longer, or lower the bar", t.Supervisor, answered, b.MinDecided)
	case t.Agreement < b.MinAgreement:
		return fmt.Errorf("%s agreed on %.1f%% of %d answers, under the %.1f%% a promotion needs: agentmux policy shadow lists its disagreements",
			t.Supervisor, 100*t.Agreement, answered, 100*b.MinAgreement)
	case float64(t.NoAnswer) > (1-b.MinAgreement)*float64(t.Decided):
		return fmt.Errorf("%s gave no answer to %d of the %d requests it shadowed: promoted, those would get their default answer; give it a longer deadline or a fallback first",
			t.Supervisor, t.NoAnswer, t.Decided)
	}
	return nil
}

// ReadShadows tallies the shadow records of the audit since from (of supervisor alone,
// if named), marks the promoted shadows, and lists the disagreements, oldest first.
func ReadShadows(ctx context.Context, nc *nats.Conn, from time.Time, supervisor string) ([]ShadowTally, []*wire.AuditRecord, error) {
	var records []*wire.AuditRecord
	err := store.SearchAudit(ctx, nc, store.AuditQuery{Kind: "shadow", Since: from}, func(r *wire.AuditRecord) error {
		if supervisor == "" || ShadowOf(r) == supervisor {
			records = append(records, r)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	promotions, err := store.ReadPromotions(ctx, nc)
	if err != nil {
		return nil, nil, err
	}
	if supervisor != "" {
		maps.DeleteFunc(promotions, func(name string, _ *wire.Promotion) bool { return name != supervisor })
	}
	tallies, disagreed := Shadows(records)
	return Promoted(tallies, promotions), disagreed, nil
}

// Promote asks the fleet to promote shadow in person's name, once its decisions since
// from clear the bar; the error says why not. The reply may still carry the node's
// refusal.
func Promote(ctx context.Context, nc *nats.Conn, shadow, person, note string, from time.Time, bar Bar) (*wire.ShadowPromoteReply, error) {
	tallies, _, err := ReadShadows(ctx, nc, from, shadow)
	if err != nil {
		return nil, err
	}
	if len(tallies) == 0 || tallies[0].Decided == 0 {
		return nil, fmt.Errorf("%s made no shadow decisions since %s: name it a route's shadow (shadow = %q) and let it decide first", shadow, from.UTC().Format(time.RFC3339), shadow)
	}
	t := tallies[0]
	if err := bar.Check(t); err != nil {
		return nil, fmt.Errorf("not promoted: %w", err)
	}
	return store.PromoteShadow(ctx, nc, shadow, person, &wire.ShadowPromote{Note: note, Agreement: t.Agreement, Decided: t.Agreed + t.Disagreed, SinceMS: from.UnixMilli()})
}
