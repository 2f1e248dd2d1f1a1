package wire

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Spend is what a session's model calls cost, in all and by model: on its result, its
// session.ended event and audit record.
type Spend struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	// Unpriced names the models whose cost neither the agent reported nor [pricing]
	// gives: CostUSD leaves their tokens out.
	Unpriced []string     `json:"unpriced,omitempty"`
	Models   []ModelSpend `json:"models,omitempty"`
}

// ModelSpend is one model's part of a Spend.
type ModelSpend struct {
	Model            string  `json:"model"` // "" when the agent did not say
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	// PricedBy says where CostUSD comes from: "agent" (it reported it), "pricing" (the
	// manifest's table), or "" (nowhere: the model is Unpriced).
	PricedBy string `json:"priced_by,omitempty"`
	// ClaimedUSD is the cost the agent reported where the manifest's table priced its
	// tokens otherwise: its claim, kept beside the price counted.
	ClaimedUSD float64 `json:"claimed_usd,omitempty"`
}

// Pricing sources of a ModelSpend.
const (
	PricedByAgent   = "agent"
	PricedByPricing = "pricing"
)

// Dollars is usd as a person reads it: two decimals, none for whole dollars ("5",
// "5.02").
func Dollars(usd float64) string { return strings.TrimSuffix(fmt.Sprintf("%.2f", usd), ".00") }

// SpendTotal is the tokens and cost of spends together (no models); nil when there
// are none.
func SpendTotal(spends ...*Spend) *Spend {
	var t *Spend
	for _, s := range spends {
		if s == nil {
			continue
		}
		if t == nil {
			t = &Spend{}
		}
		t.InputTokens += s.InputTokens
		t.OutputTokens += s.OutputTokens
		t.CacheReadTokens += s.CacheReadTokens
		t.CacheWriteTokens += s.CacheWriteTokens
		t.CostUSD += s.CostUSD
	}
	return t
}

// Tokens is every token s counts.
func (s *Spend) Tokens() int64 {
	return s.InputTokens + s.OutputTokens + s.CacheReadTokens + s.CacheWriteTokens
}

// SpendBucket keeps what each host's sessions cost each day, fleet-wide: one key per
// day and host (SpendKey), added to by every node as its sessions end.
const SpendBucket = "agentmux_spend"

// SpendKey is the key of host's spend on day (UTC).
func SpendKey(day time.Time, host string) string { return day.UTC().Format(time.DateOnly) + "." + host }

// DailySpend is one host's spend on one day, across the fleet.
type DailySpend struct {
	Day              string  `json:"day"` // YYYY-MM-DD, UTC
	Host             string  `json:"host"`
	Sessions         int64   `json:"sessions"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	// Unpriced counts the sessions with a model neither their agent nor [pricing]
	// priced: CostUSD leaves those models out.
	Unpriced int64 `json:"unpriced,omitempty"`
	// RaisedUSD is what people raised the host's daily budget by on this day, and
	// Raises who raised it, how much, and why.
	RaisedUSD float64      `json:"raised_usd,omitempty"`
	Raises    []DailyRaise `json:"raises,omitempty"`
	// ReleasedUSD is what an operator's resets released of CostUSD: spend that no longer
	// holds the host's tasks.
	ReleasedUSD float64 `json:"released_usd,omitempty"`
}

// Held reports whether the day holds its host's tasks against a daily budget of limit
// US dollars (0: none): what it spent and was not released has reached the budget and
// the raises.
func (d *DailySpend) Held(limit float64) bool {
	return limit > 0 && d.CostUSD-d.ReleasedUSD >= limit+d.RaisedUSD
}

// DailyRaise is one raise of a host's daily budget, or one reset (Reset: USD is what
// it released).
type DailyRaise struct {
	USD   float64 `json:"usd"`
	Reset bool    `json:"reset,omitempty"`
	By    string  `json:"by"`
	At    int64   `json:"at"` // unix milliseconds
	Note  string  `json:"note,omitempty"`
}

// Add counts one ended session's spend.
func (d *DailySpend) Add(s *Spend) {
	d.Sessions++
	d.InputTokens += s.InputTokens
	d.OutputTokens += s.OutputTokens
	d.CacheReadTokens += s.CacheReadTokens
	d.CacheWriteTokens += s.CacheWriteTokens
	d.CostUSD += s.CostUSD
	if len(s.Unpriced) > 0 {
		d.Unpriced++
	}
}

// Merge adds o's counts to d's (a total over days or hosts).
func (d *DailySpend) Merge(o *DailySpend) {
	d.Sessions += o.Sessions
	d.InputTokens += o.InputTokens
	d.OutputTokens += o.OutputTokens
	d.CacheReadTokens += o.CacheReadTokens
	d.CacheWriteTokens += o.CacheWriteTokens
	d.CostUSD += o.CostUSD
	d.Unpriced += o.Unpriced
	d.RaisedUSD += o.RaisedUSD
	d.ReleasedUSD += o.ReleasedUSD
}

// The states of a host's day against its daily budget.
const (
	DailyTaken = "taken" // its tasks are taken
	DailyHeld  = "held"  // at its budget: its tasks wait in the queue
)

// DailyBudget is a host's day against the fleet's daily budget ([budgets.daily]).
type DailyBudget struct {
	*DailySpend
	LimitUSD float64 `json:"limit_usd,omitempty"` // the budget and today's raises; 0: none
	State    string  `json:"state"`               // DailyTaken or DailyHeld
}

// DailyBudgets is the day of each of hosts today (UTC) against limit, the daily budget
// in US dollars (0: none), from what days holds of them, sorted by host.
func DailyBudgets(hosts []string, limit float64, days []*DailySpend, now time.Time) []*DailyBudget {
	today := now.UTC().Format(time.DateOnly)
	byHost := map[string]*DailySpend{}
	for _, d := range days {
		if d.Day == today {
			byHost[d.Host] = d
		}
	}
	out := make([]*DailyBudget, 0, len(hosts))
	for _, host := range hosts {
		d := byHost[host]
		if d == nil {
			d = &DailySpend{Day: today, Host: host}
		}
		b := &DailyBudget{DailySpend: d, State: DailyTaken}
		if limit > 0 {
			b.LimitUSD = limit + d.RaisedUSD
			if d.Held(limit) {
				b.State = DailyHeld
			}
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *DailyBudget) int { return strings.Compare(a.Host, b.Host) })
	return out
}
