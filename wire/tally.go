package wire

import (
	"maps"
	"slices"

	"github.com/agentmux/agentmux/protocol"
)

// Tally adds up a session's usage lines, by model, across its attempts; Spend prices
// it. The zero Tally is empty and ready.
type Tally struct {
	models map[string]*modelTally
}

// modelTally is one model's usage: its tokens, and the cost the agent reported, if it
// reported any (then the agent prices the model; otherwise [pricing] does).
type modelTally struct {
	tokens   protocol.Usage
	reported float64
	anyCost  bool
}

// Add counts one usage line: a call's is added; a total (Usage.Total) takes the place
// of what its model had, for what it carries (tokens, cost, or both).
func (t *Tally) Add(u *protocol.Usage) {
	m := t.model(u.Model)
	if u.Total && u.HasTokens {
		m.tokens = protocol.Usage{}
	}
	addTokens(&m.tokens, u)
	if u.CostUSD != nil {
		if u.Total {
			m.reported = 0
		}
		m.reported += *u.CostUSD
		m.anyCost = true
	}
}

// Merge adds what o counted (an earlier attempt's) to t.
func (t *Tally) Merge(o *Tally) {
	if o == nil {
		return
	}
	for model, om := range o.models {
		m := t.model(model)
		addTokens(&m.tokens, &om.tokens)
		m.reported += om.reported
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

// Spend is what t cost: each model's cost as the agent reported it, or, for a model the
// agent reported no cost for, its tokens priced by price (the manifest's [pricing]); a
// model price does not know either is Unpriced. Nil when t counted nothing.
func (t *Tally) Spend(price func(model string, u *protocol.Usage) (float64, bool)) *Spend {
	if t.Empty() {
		return nil
	}
	s := &Spend{}
	for _, model := range slices.Sorted(maps.Keys(t.models)) {
		m := t.models[model]
		if m.tokens.Tokens() == 0 && !m.anyCost {
			continue // counted live, then set to nothing by a total that names it otherwise
		}
		ms := ModelSpend{Model: model, InputTokens: m.tokens.Input, OutputTokens: m.tokens.Output, CacheReadTokens: m.tokens.CacheRead,
			CacheWriteTokens: m.tokens.CacheWrite, CostUSD: m.reported}
		switch cost, ok := price(model, &m.tokens); {
		case m.anyCost:
			ms.PricedBy = PricedByAgent
		case ok:
			ms.CostUSD, ms.PricedBy = cost, PricedByPricing
		case m.tokens.Tokens() > 0:
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
