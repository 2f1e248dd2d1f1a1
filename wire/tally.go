package wire

import (
	"maps"
	"math"
	"slices"

	"github.com/agentmux/agentmux/protocol"
)

// Tally adds up a session's usage lines, by model, across its attempts; Spend prices
// it. The zero Tally is empty and ready.
type Tally struct {
	models map[string]*modelTally
}

// modelTally is one model's usage: its tokens, and the cost the agent reported, if it
// reported any ([pricing] prices the model where it can; otherwise the agent does).
// lowered is what totals took back from it that no later total of a model gave back
// (tokens, and loweredUSD of the cost): still counted, as the model's.
type modelTally struct {
	tokens     protocol.Usage
	reported   float64
	anyCost    bool
	lowered    protocol.Usage
	loweredUSD float64
}

// Add counts one usage line: a call's is added; a total (Usage.Total) takes the place
// of what its model had, for what it carries (tokens, cost, or both). A total may move
// what was counted from one model to another (Claude Code names a model in its result
// otherwise than in its messages: the dialect sets the first to nothing and the second
// to the whole), but never lowers what the session counted: what a total takes from a
// model stays counted until a later total of a model (its own first) counts it again.
// What an agent reports is a claim, and {"total":true,"cost_usd":0} undoes nothing.
func (t *Tally) Add(u *protocol.Usage) {
	m := t.model(u.Model)
	if !u.Total {
		addTokens(&m.tokens, u)
		if u.CostUSD != nil {
			m.reported += *u.CostUSD
			m.anyCost = true
		}
		return
	}
	order := t.ordered(m)
	if u.HasTokens {
		for _, k := range tokenKinds {
			total(order, k(&m.tokens), *k(u), func(o *modelTally) *int64 { return k(&o.lowered) })
		}
	}
	if u.CostUSD != nil {
		total(order, &m.reported, *u.CostUSD, func(o *modelTally) *float64 { return &o.loweredUSD })
		m.anyCost = true
	}
}

// tokenKinds are the token counts of a Usage, each by its field.
var tokenKinds = []func(*protocol.Usage) *int64{
	func(u *protocol.Usage) *int64 { return &u.Input },
	func(u *protocol.Usage) *int64 { return &u.Output },
	func(u *protocol.Usage) *int64 { return &u.CacheRead },
	func(u *protocol.Usage) *int64 { return &u.CacheWrite },
}

// total sets one count of order[0] (*field) to a total: what it lowers is kept in the
// model's lowered (lowered picks the same count of a tally); what it raises is first
// taken back from what totals lowered, the model's own, then the others' in order.
func total[T int64 | float64](order []*modelTally, field *T, to T, lowered func(*modelTally) *T) {
	from := *field
	*field = to
	if to < from {
		*lowered(order[0]) += from - to
		return
	}
	grew := to - from
	for _, o := range order {
		back := min(grew, *lowered(o))
		*lowered(o) -= back
		grew -= back
	}
}

// ordered is m, then t's other models by name.
func (t *Tally) ordered(m *modelTally) []*modelTally {
	out := []*modelTally{m}
	for _, name := range slices.Sorted(maps.Keys(t.models)) {
		if o := t.models[name]; o != m {
			out = append(out, o)
		}
	}
	return out
}

// Merge adds what o counted (an earlier attempt's) to t.
func (t *Tally) Merge(o *Tally) {
	if o == nil {
		return
	}
	for model, om := range o.models {
		m := t.model(model)
		addTokens(&m.tokens, &om.tokens)
		addTokens(&m.lowered, &om.lowered)
		m.reported += om.reported
		m.loweredUSD += om.loweredUSD
		m.anyCost = m.anyCost || om.anyCost
	}
}

// model is the tally of model, made on first use.
func (t *Tally) model(name string) *modelTally {
	if t.models == nil {
		t.models = map[string]*modelTally{}
	}
	m := t.models[name]
	if m == nil {
		m = &modelTally{}
		t.models[name] = m
	}
	return m
}

// Empty reports whether t counted nothing.
func (t *Tally) Empty() bool { return t == nil || len(t.models) == 0 }

func addTokens(dst, u *protocol.Usage) {
	dst.Input += u.Input
	dst.Output += u.Output
	dst.CacheRead += u.CacheRead
	dst.CacheWrite += u.CacheWrite
}

// claimTolerance is how far an agent's cost may differ from the table's price of its
// tokens and still be the same figure (rounding, a price change mid-month).
const claimTolerance = 0.01

// Spend is what t cost: each model's tokens priced by price (the manifest's [pricing])
// where it prices the model, or else the cost the agent reported; a model neither
// prices is Unpriced. Nil when t counted nothing.
func (t *Tally) Spend(price func(model string, u *protocol.Usage) (float64, bool)) *Spend {
	if t.Empty() {
		return nil
	}
	s := &Spend{}
	for _, model := range slices.Sorted(maps.Keys(t.models)) {
		m := t.models[model]
		tokens, reported := m.tokens, m.reported+m.loweredUSD
		addTokens(&tokens, &m.lowered)
		if tokens.Tokens() == 0 && !m.anyCost {
			continue // counted live, then moved by a total to a model named otherwise
		}
		ms := ModelSpend{Model: model, InputTokens: tokens.Input, OutputTokens: tokens.Output, CacheReadTokens: tokens.CacheRead,
			CacheWriteTokens: tokens.CacheWrite, CostUSD: reported}
		switch cost, ok := price(model, &tokens); {
		case ok && tokens.Tokens() > 0:
			// The table prices what the tokens cost; an agent's own figure that disagrees
			// (by more than rounding) is kept beside it as its claim.
			ms.CostUSD, ms.PricedBy = cost, PricedByPricing
			if m.anyCost && math.Abs(reported-cost) > claimTolerance*max(cost, reported) {
				ms.ClaimedUSD = reported
			}
		case m.anyCost:
			ms.PricedBy = PricedByAgent
		case ok:
			ms.CostUSD, ms.PricedBy = cost, PricedByPricing
		case tokens.Tokens() > 0:
			s.Unpriced = append(s.Unpriced, model)
		}
		s.InputTokens += ms.InputTokens
		s.OutputTokens += ms.OutputTokens
		s.CacheReadTokens += ms.CacheReadTokens
		s.CacheWriteTokens += ms.CacheWriteTokens
		s.CostUSD += ms.CostUSD
		s.Models = append(s.Models, ms)
	}
	return s
}
