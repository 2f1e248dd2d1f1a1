package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// TypeUsage is a usage line: what the agent's model calls cost, as
// {"type":"usage","model":"…","input_tokens":N,"output_tokens":N,"cost_usd":X}. Dialects
// make it from what their agent reports (Claude Code's result, Codex's token counts,
// ACP's usage_update); a native agent writes it itself.
const TypeUsage Type = "usage"

// Usage is what model calls cost: tokens by kind, and the price in US dollars when the
// agent knows it (nil: unknown; the manifest's [pricing] may price the tokens).
type Usage struct {
	Model      string   `json:"model,omitempty"`
	Input      int64    `json:"input_tokens"`
	Output     int64    `json:"output_tokens"`
	CacheRead  int64    `json:"cache_read_tokens,omitempty"`
	CacheWrite int64    `json:"cache_write_tokens,omitempty"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	// Total: these are the session's so far for Model, in place of what came before
	// (Claude Code's result, Codex's running totals); otherwise one call's, added.
	// A total replaces what it carries: its tokens when it has any, its cost when it
	// has one.
	Total bool `json:"total,omitempty"`
	// HasTokens: the line gave token counts, not only a cost.
	HasTokens bool `json:"-"`
}

// The most one usage line may claim. A figure past either is no model call's and no
// session's so far, but a runaway or a lie: it is not counted, and its session is
// paused (agent.Agent), not its host's day.
const (
	MaxLineUSD    = 10_000.0
	MaxLineTokens = 10_000_000_000
)

// Runaway says why u claims more than one usage line may, or "" when it does not.
func (u *Usage) Runaway() string {
	if u.CostUSD != nil && *u.CostUSD > MaxLineUSD {
		return fmt.Sprintf("an impossible $%g in one usage line (one line may claim at most $%g; not counted)", *u.CostUSD, MaxLineUSD)
	}
	for _, n := range []int64{u.Input, u.Output, u.CacheRead, u.CacheWrite} {
		if n > MaxLineTokens {
			return fmt.Sprintf("an impossible %d tokens in one usage line (one line may claim at most %d; not counted)", n, int64(MaxLineTokens))
		}
	}
	return ""
}

// Tokens is every token the usage counts.
func (u *Usage) Tokens() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// ParseUsage reads a usage line's fields: counts must be whole and not negative, a cost
// a number not below zero.
func ParseUsage(raw []byte) (*Usage, error) {
	var w struct {
		Model      string   `json:"model"`
		Input      *float64 `json:"input_tokens"`
		Output     *float64 `json:"output_tokens"`
		CacheRead  *float64 `json:"cache_read_tokens"`
		CacheWrite *float64 `json:"cache_write_tokens"`
		CostUSD    *float64 `json:"cost_usd"`
		Total      bool     `json:"total"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("a usage line: %w", err)
	}
	u := &Usage{Model: w.Model, CostUSD: w.CostUSD, Total: w.Total,
		HasTokens: w.Input != nil || w.Output != nil || w.CacheRead != nil || w.CacheWrite != nil}
	for _, f := range []struct {
		name string
		in   *float64
		out  *int64
	}{{"input_tokens", w.Input, &u.Input}, {"output_tokens", w.Output, &u.Output},
		{"cache_read_tokens", w.CacheRead, &u.CacheRead}, {"cache_write_tokens", w.CacheWrite, &u.CacheWrite}} {
		if f.in == nil {
			continue
		}
		if *f.in < 0 || *f.in != math.Trunc(*f.in) || *f.in > math.MaxInt64/2 {
			return nil, fmt.Errorf("%s must be a whole number of tokens, not %v", f.name, *f.in)
		}
		*f.out = int64(*f.in)
	}
	if u.CostUSD != nil && (*u.CostUSD < 0 || math.IsInf(*u.CostUSD, 0) || math.IsNaN(*u.CostUSD)) {
		return nil, fmt.Errorf("cost_usd must not be negative, got %v", *u.CostUSD)
	}
	if w.Input == nil && w.Output == nil && w.CacheRead == nil && w.CacheWrite == nil && w.CostUSD == nil {
		return nil, errors.New(`a usage line needs tokens or a cost: "input_tokens", "output_tokens", "cost_usd"`)
	}
	return u, nil
}
