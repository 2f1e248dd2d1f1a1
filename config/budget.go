package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// Budget is what a session may spend before it is paused and its supervisors asked
// whether it goes on: [hosts.X] budget, a pipeline's budget. A zero field sets no
// limit; a "yes" raises each limit it sets by as much again.
type Budget struct {
	// USD is the cost of its model calls in US dollars: as the agent reports it, or
	// its tokens priced by [pricing].
	USD float64 `toml:"usd"`
	// Tokens counts every token its model calls read and wrote, cache included.
	Tokens int64 `toml:"tokens"`
	// Wall is how long its agent may work, from the session's start.
	Wall Duration `toml:"wall"`
}

// Raised is b with each limit it sets raised by step's.
func (b Budget) Raised(step Budget) Budget {
	if b.USD > 0 {
		b.USD += step.USD
	}
	if b.Tokens > 0 {
		b.Tokens += step.Tokens
	}
	if b.Wall > 0 {
		b.Wall += step.Wall
	}
	return b
}

// Exceeded says which of b's limits a session that spent usd and tokens in wall has
// reached, in words ("" when none): "$5.02 of $5".
func (b Budget) Exceeded(usd float64, tokens int64, wall time.Duration) string {
	var over []string
	if b.USD > 0 && usd >= b.USD {
		over = append(over, fmt.Sprintf("$%.2f of $%s", usd, wire.Dollars(b.USD)))
	}
	if b.Tokens > 0 && tokens >= b.Tokens {
		over = append(over, fmt.Sprintf("%d tokens of %d", tokens, b.Tokens))
	}
	if b.Wall > 0 && wall >= b.Wall.D() {
		unit := time.Second
		if b.Wall.D() < time.Minute {
			unit = time.Millisecond
		}
		over = append(over, fmt.Sprintf("%v of %v", wall.Round(unit), b.Wall.D()))
	}
	return strings.Join(over, ", ")
}

// Step says what a "yes" raises b by, in words: "+$5, +2000000 tokens".
func (b Budget) Step() string {
	var s []string
	if b.USD > 0 {
		s = append(s, "+$"+wire.Dollars(b.USD))
	}
	if b.Tokens > 0 {
		s = append(s, fmt.Sprintf("+%d tokens", b.Tokens))
	}
	if b.Wall > 0 {
		s = append(s, "+"+b.Wall.D().String())
	}
	return strings.Join(s, ", ")
}

// budget checks a budget as written at path: each limit 0 or more, one at least.
func (v *validator) budget(path []string, b *Budget) {
	if b == nil {
		return
	}
	bad := false
	if b.USD < 0 || math.IsNaN(b.USD) || math.IsInf(b.USD, 0) {
		v.add(append(path, "usd"), "%v is not an amount: give US dollars, more than 0", b.USD)
		bad = true
	}
	if b.Tokens < 0 {
		v.add(append(path, "tokens"), "%d is negative: give a number of tokens, more than 0", b.Tokens)
		bad = true
	}
	if !bad && b.USD <= 0 && b.Tokens <= 0 && b.Wall <= 0 {
		v.add(path, `a budget sets no limit; give usd, tokens or wall, e.g. { usd = 5, wall = "2h" }`)
	}
}

// Budgets are the fleet's budgets beyond each session's: [budgets.daily], and the
// ceiling of a session whose own budget sets no dollars.
type Budgets struct {
	Daily *DailyBudget `toml:"daily"`
	// SessionUSD is what a session whose budget sets no usd (or that has none) may
	// spend, as its agent claims it, before it is paused and its supervisors asked, as at
	// a budget; a "yes" raises it by as much again. 0: DefaultSessionUSD.
	SessionUSD float64 `toml:"session_usd"`
}

// DefaultSessionUSD is [budgets] session_usd when the manifest does not set it.
const DefaultSessionUSD = 1000.0

// SessionCeiling is [budgets] session_usd, or its default.
func (b Budgets) SessionCeiling() float64 {
	if b.SessionUSD > 0 {
		return b.SessionUSD
	}
	return DefaultSessionUSD
}

// DailyBudget is what each host may spend in a day (UTC), fleet-wide: once its
// sessions that ended today cost this much (plus what people raised it by today), its
// queued tasks wait in the queue until the next day or a raise.
type DailyBudget struct {
	USD float64 `toml:"usd"`
}

func (v *validator) budgets(b *Budgets) {
	if u := b.SessionUSD; u < 0 || math.IsNaN(u) || math.IsInf(u, 0) {
		v.add([]string{"budgets", "session_usd"}, "%v is not an amount: give US dollars a session may spend before it is paused, more than 0 (default %g)", u, DefaultSessionUSD)
	}
	if d := b.Daily; d != nil && (d.USD <= 0 || math.IsNaN(d.USD) || math.IsInf(d.USD, 0)) {
		v.add([]string{"budgets", "daily", "usd"}, "%v is not an amount: give US dollars per host and day, more than 0", d.USD)
	}
}

// DailyUSD is the daily budget of each host in US dollars; 0: none.
func (b Budgets) DailyUSD() float64 {
	if b.Daily == nil {
		return 0
	}
	return b.Daily.USD
}
