package config

import (
	"math"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/protocol"
)

// TestPricing: a model's price per million tokens prices each kind, cache tokens at the
// input's price unless given; a negative price is refused by its key, and a model the
// table does not name has no price.
func TestPricing(t *testing.T) {
	m, err := Parse("m.toml", []byte(`[supervisors.s]
strategy = "static"
answers = { question = "ok" }
[pricing."claude-sonnet-4-5"]
input_per_mtok = 3
output_per_mtok = 15
cache_read_per_mtok = 0.3
[pricing.gpt-5-mini]
input_per_mtok = 0.25
output_per_mtok = 2
`))
	if err != nil {
		t.Fatal(err)
	}
	u := &protocol.Usage{Input: 1_000_000, Output: 100_000, CacheRead: 2_000_000, CacheWrite: 10_000}
	if usd, ok := m.Pricing.Cost("claude-sonnet-4-5", u); !ok || math.Abs(usd-(3+1.5+0.6+0.03)) > 1e-9 {
		t.Errorf("sonnet: %v, %v; want $5.13 (cache writes at the input's price)", usd, ok)
	}
	if usd, ok := m.Pricing.Cost("gpt-5-mini", u); !ok || math.Abs(usd-(0.25+0.2+0.5+0.0025)) > 1e-9 {
		t.Errorf("gpt-5-mini: %v, %v; want $0.9525", usd, ok)
	}
	if _, ok := m.Pricing.Cost("nobody", u); ok {
		t.Error("a model the table does not name has a price")
	}
	_, err = Parse("m.toml", []byte("[supervisors.s]\nstrategy = \"static\"\nanswers = { question = \"ok\" }\n[pricing.m]\ninput_per_mtok = -1\noutput_per_mtok = 2\n"))
	if err == nil || !strings.Contains(err.Error(), "pricing.m.input_per_mtok") || !strings.Contains(err.Error(), "-1 is not a price") {
		t.Errorf("a negative price: %v; want it refused by its key", err)
	}
}
