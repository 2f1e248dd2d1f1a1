package wire

import (
	"math"
	"slices"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

func usd(v float64) *float64 { return &v }

// TestTallySpend: calls add up, a total takes the place of what its model had (tokens
// and cost apart, as ACP sends them), attempts merge, a cost the agent reported is
// kept, a model without one is priced by the table, and a model the table does not
// know is named unpriced, not counted as free.
func TestTallySpend(t *testing.T) {
	var a Tally
	a.Add(&protocol.Usage{Model: "sonnet", Input: 100, Output: 10, CostUSD: usd(0.5)})
	a.Add(&protocol.Usage{Model: "sonnet", Input: 200, Output: 20, CostUSD: usd(0.25)})
	a.Add(&protocol.Usage{Model: "haiku", Input: 1000, Output: 100, CacheRead: 50, Total: true, HasTokens: true, CostUSD: usd(1)})
	a.Add(&protocol.Usage{Model: "haiku", Input: 2000, Output: 200, CacheRead: 100, Total: true, HasTokens: true, CostUSD: usd(2)}) // the run so far
	var b Tally
	b.Add(&protocol.Usage{Model: "gpt", Input: 1_000_000, Output: 500_000}) // an earlier attempt's, no cost
	b.Add(&protocol.Usage{Model: "local", Input: 7})
	a.Merge(&b)
	// ACP: the cost and the tokens of the session so far, on lines of their own.
	a.Add(&protocol.Usage{Model: "acp", CostUSD: usd(0.5), Total: true})
	a.Add(&protocol.Usage{Model: "acp", Input: 40, Output: 4, Total: true, HasTokens: true})
	a.Add(&protocol.Usage{Model: "acp", Input: 90, Output: 9, Total: true, HasTokens: true})
	a.Add(&protocol.Usage{Model: "acp", CostUSD: usd(1.5), Total: true})
	price := func(model string, u *protocol.Usage) (float64, bool) {
		if model != "gpt" {
			return 0, false
		}
		return (float64(u.Input)*2 + float64(u.Output)*8) / 1e6, true
	}
	s := a.Spend(price)
	byModel := map[string]ModelSpend{}
	for _, m := range s.Models {
		byModel[m.Model] = m
	}
	if m := byModel["sonnet"]; m.InputTokens != 300 || m.OutputTokens != 30 || m.CostUSD != 0.75 || m.PricedBy != PricedByAgent {
		t.Errorf("sonnet's calls: %+v; want 300 in, 30 out, $0.75 as reported", m)
	}
	if m := byModel["haiku"]; m.InputTokens != 2000 || m.CacheReadTokens != 100 || m.CostUSD != 2 {
		t.Errorf("haiku's totals: %+v; want the last total alone", m)
	}
	if m := byModel["gpt"]; m.CostUSD != 6 || m.PricedBy != PricedByPricing {
		t.Errorf("gpt priced: %+v; want $6 by the table", m)
	}
	if m := byModel["local"]; m.CostUSD != 0 || m.PricedBy != "" || !slices.Equal(s.Unpriced, []string{"local"}) {
		t.Errorf("local: %+v, unpriced %q; want it named unpriced", m, s.Unpriced)
	}
	if m := byModel["acp"]; m.InputTokens != 90 || m.OutputTokens != 9 || m.CostUSD != 1.5 || m.PricedBy != PricedByAgent {
		t.Errorf("acp: %+v; want the last totals, 90 in, 9 out, $1.5", m)
	}
	if s.InputTokens != 300+2000+1_000_000+7+90 || math.Abs(s.CostUSD-10.25) > 1e-9 || s.Tokens() != s.InputTokens+s.OutputTokens+s.CacheReadTokens {
		t.Errorf("the session's spend: %+v; want every model's tokens and $10.25", s)
	}
	var none Tally
	if none.Spend(price) != nil || !none.Empty() {
		t.Error("an empty tally has a spend")
	}
}

// BenchmarkTallyAdd: the agent actor counts each usage line as it reads it.
func BenchmarkTallyAdd(b *testing.B) {
	var t Tally
	u := &protocol.Usage{Model: "claude-sonnet-4-5", Input: 1200, Output: 300, CacheRead: 9000, CostUSD: usd(0.01)}
	b.ReportAllocs()
	for b.Loop() {
		t.Add(u)
	}
}

// TestTallyTakesUsageAsAClaim: a total of 0 (or of less) does not undo what a session
// spent, so a budget still sees it; where the table prices a model, its price of the
// tokens is counted and an agent's figure that disagrees is kept as its claim, so a cost
// of $0 or $1e6 for priced tokens counts what they cost.
func TestTallyTakesUsageAsAClaim(t *testing.T) {
	var a Tally
	a.Add(&protocol.Usage{Model: "m", Input: 1000, Output: 100, CostUSD: usd(2)})
	a.Add(&protocol.Usage{Model: "m", Total: true, CostUSD: usd(0)})
	a.Add(&protocol.Usage{Model: "m", Total: true, HasTokens: true})
	a.Add(&protocol.Usage{Model: "m", Total: true, HasTokens: true, Input: 500, Output: 200, CostUSD: usd(1)})
	noTable := func(string, *protocol.Usage) (float64, bool) { return 0, false }
	if s := a.Spend(noTable); s.InputTokens != 1000 || s.OutputTokens != 200 || s.CostUSD != 2 {
		t.Fatalf("after totals of 0 and of less: %+v; want 1000 in, 200 out (the larger of each), $2", s)
	}
	// A total may move what was counted to a model named otherwise (Claude Code's
	// result), never count it twice, and never take it away.
	var r Tally
	r.Add(&protocol.Usage{Model: "sonnet", Input: 300, Output: 30})
	r.Add(&protocol.Usage{Model: "sonnet", Total: true, HasTokens: true})
	r.Add(&protocol.Usage{Model: "sonnet-4-5", Total: true, HasTokens: true, Input: 310, Output: 30, CostUSD: usd(0.01)})
	if s := r.Spend(noTable); len(s.Models) != 1 || s.InputTokens != 310 || s.OutputTokens != 30 {
		t.Errorf("moved by a total to another name: %+v; want sonnet-4-5's 310 in, 30 out alone", s)
	}
	table := func(model string, u *protocol.Usage) (float64, bool) {
		return float64(u.Input)/1e6*3 + float64(u.Output)/1e6*15, model == "priced"
	}
	for _, c := range []struct {
		claimed, want, claim float64
	}{{0, 0.0045, 0}, {1e6, 0.0045, 1e6}, {0.0045, 0.0045, 0}, {0.00451, 0.0045, 0}} {
		var b Tally
		b.Add(&protocol.Usage{Model: "priced", Input: 1000, Output: 100, CostUSD: usd(c.claimed)})
		m := b.Spend(table).Models[0]
		if math.Abs(m.CostUSD-c.want) > 1e-12 || m.PricedBy != PricedByPricing || m.ClaimedUSD != c.claim {
			t.Errorf("claimed $%v for tokens the table prices at $%v: %+v; want $%v counted, claim %v kept", c.claimed, c.want, m, c.want, c.claim)
		}
	}
}
