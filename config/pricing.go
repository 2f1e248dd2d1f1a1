package config

import (
	"math"

	"github.com/agentmux/agentmux/protocol"
)

// Price is what a model's tokens cost, in US dollars per million: [pricing."<model>"].
// Cache reads and writes cost as much as input unless given.
type Price struct {
	InputPerMTok      float64  `toml:"input_per_mtok"`
	OutputPerMTok     float64  `toml:"output_per_mtok"`
	CacheReadPerMTok  *float64 `toml:"cache_read_per_mtok"`
	CacheWritePerMTok *float64 `toml:"cache_write_per_mtok"`
}

// Pricing prices the tokens of the models it names: those an agent reports without a
// cost, and the llm supervisors' own calls.
type Pricing map[string]*Price

// Cost is what u's tokens cost at model's price; false when the table has no price
// for model.
func (p Pricing) Cost(model string, u *protocol.Usage) (float64, bool) {
	pr := p[model]
	if pr == nil {
		return 0, false
	}
	read, write := pr.InputPerMTok, pr.InputPerMTok
	if pr.CacheReadPerMTok != nil {
		read = *pr.CacheReadPerMTok
	}
	if pr.CacheWritePerMTok != nil {
		write = *pr.CacheWritePerMTok
	}
	usd := float64(u.Input)*pr.InputPerMTok + float64(u.Output)*pr.OutputPerMTok + float64(u.CacheRead)*read + float64(u.CacheWrite)*write
	return usd / 1e6, true
}

func (v *validator) pricing(p Pricing) {
	for model, pr := range p {
		at := []string{"pricing", model}
		if pr == nil {
			continue
		}
		for _, f := range []struct {
			key string
			v   *float64
		}{{"input_per_mtok", &pr.InputPerMTok}, {"output_per_mtok", &pr.OutputPerMTok}, {"cache_read_per_mtok", pr.CacheReadPerMTok}, {"cache_write_per_mtok", pr.CacheWritePerMTok}} {
			if f.v != nil && (*f.v < 0 || math.IsInf(*f.v, 0) || math.IsNaN(*f.v)) {
				v.add(append(at, f.key), "%v is not a price: give US dollars per million tokens, 0 or more", *f.v)
			}
		}
		if pr.InputPerMTok == 0 && pr.OutputPerMTok == 0 {
			v.warn(at, "input_per_mtok and output_per_mtok are both 0: the model's tokens are priced as free")
		}
	}
}
