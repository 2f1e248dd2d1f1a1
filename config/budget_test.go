package config

import (
	"strings"
	"testing"
	"time"
)

func TestHostBudget(t *testing.T) {
	host := func(budget string) string {
		return "[hosts.w]\ncommand = \"sh\"\nbudget = " + budget + "\n"
	}
	m, err := Parse("m.toml", []byte(host(`{ usd = 5, tokens = 2000000, wall = "2h" }`)))
	if err != nil {
		t.Fatal(err)
	}
	b := m.Hosts["w"].Budget
	if b == nil || b.USD != 5 || b.Tokens != 2_000_000 || b.Wall.D() != 2*time.Hour {
		t.Fatalf("budget %+v", b)
	}
	if got := b.Exceeded(5.019, 10, time.Hour); got != "$5.02 of $5" {
		t.Errorf("exceeded: %q", got)
	}
	if got := b.Exceeded(1, 2_000_000, 3*time.Hour); got != "2000000 tokens of 2000000, 3h0m0s of 2h0m0s" {
		t.Errorf("exceeded: %q", got)
	}
	if got := b.Exceeded(4.99, 1_999_999, time.Hour); got != "" {
		t.Errorf("under every limit, exceeded: %q", got)
	}
	if r := b.Raised(*b); r.USD != 10 || r.Tokens != 4_000_000 || r.Wall.D() != 4*time.Hour {
		t.Errorf("raised: %+v", r)
	}
	if got := b.Step(); got != "+$5, +2000000 tokens, +2h0m0s" {
		t.Errorf("step: %q", got)
	}
	if r := (Budget{USD: 5}).Raised(Budget{USD: 2.5, Tokens: 10}); r.USD != 7.5 || r.Tokens != 0 {
		t.Errorf("raised: %+v; want $7.5 and still no token limit", r)
	}
	for budget, want := range map[string]string{
		`{ usd = -1 }`:      "hosts.w.budget.usd (m.toml:3:12): -1 is not an amount",
		`{ tokens = -5 }`:   "hosts.w.budget.tokens (m.toml:3:12): -5 is negative",
		`{}`:                "hosts.w.budget (m.toml:3:1): a budget sets no limit; give usd, tokens or wall",
		`{ wall = "soon" }`: `"soon" is not a duration`,
	} {
		if _, err := Parse("m.toml", []byte(host(budget))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("budget = %s: %v; want %q", budget, err, want)
		}
	}
}

// TestSessionCeiling: [budgets] session_usd is read, defaults to $1,000, and is refused
// negative, saying what to give.
func TestSessionCeiling(t *testing.T) {
	const host = "[hosts.w]\ncommand = \"sh\"\n"
	m, err := Parse("m.toml", []byte(host+"[budgets]\nsession_usd = 25\n"))
	if err != nil || m.Budgets.SessionCeiling() != 25 {
		t.Fatalf("session_usd = 25: %v, %v", m, err)
	}
	if m, err := Parse("m.toml", []byte(host)); err != nil || m.Budgets.SessionCeiling() != DefaultSessionUSD {
		t.Fatalf("no session_usd: %v, %v; want the default", m, err)
	}
	if _, err := Parse("m.toml", []byte(host+"[budgets]\nsession_usd = -3\n")); err == nil || !strings.Contains(err.Error(), "budgets.session_usd") || !strings.Contains(err.Error(), "-3 is not an amount") {
		t.Errorf("session_usd = -3: %v; want it refused", err)
	}
}
