package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// TestDailyGateHoldsUntilARaiseOrTheNextDay: a host over its daily budget is held;
// a raise written by another node lets it go at once (the gate watches the day), as
// does the next day (UTC); a reload to no budget holds nothing.
func TestDailyGateHoldsUntilARaiseOrTheNextDay(t *testing.T) {
	b := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := OpenSpend(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	if err := st.Add(ctx, "w", day, &wire.Spend{CostUSD: 2.5}); err != nil {
		t.Fatal(err)
	}
	g := NewDailyGate(st, 2)
	told := make(chan string, 8) // what the gate says, in order
	g.Held = func(host, why string) { told <- host + ": " + why }
	var mu sync.Mutex
	var now time.Time
	g.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	at := func(t time.Time) {
		mu.Lock()
		defer mu.Unlock()
		now = t
	}
	// said is the next thing the gate says.
	said := func() string {
		t.Helper()
		select {
		case s := <-told:
			return s
		case <-ctx.Done():
			t.Fatal("the gate said nothing")
			return ""
		}
	}
	at(day)
	if err := g.Wait(ctx, "other"); err != nil {
		t.Fatalf("a host under its budget waited: %v", err)
	}

	passed := make(chan error, 1)
	go func() { passed <- g.Wait(ctx, "w") }()
	heldWhy := said()
	select {
	case err := <-passed:
		t.Fatalf("w at $2.50 of $2 passed: %v", err)
	default:
	}
	if _, err := st.Raise(ctx, "w", wire.DailyRaise{USD: 1, By: "ana", At: day.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if err := <-passed; err != nil {
		t.Fatalf("after the raise: %v", err)
	}
	want := []string{"w: host w spent $2.50 of its $2 daily budget today (UTC); its tasks wait in the queue until tomorrow, a raise (agentmux budget raise) or a reset (agentmux budget reset)", "w: "}
	if got := []string{heldWhy, said()}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the gate said %q; want %q", got, want)
	}

	// Over the raised budget too: a reload to no budget lets it go at once.
	if err := st.Add(ctx, "w", day, &wire.Spend{CostUSD: 1}); err != nil {
		t.Fatal(err)
	}
	go func() { passed <- g.Wait(ctx, "w") }()
	said()
	g.SetLimit(0)
	if err := <-passed; err != nil {
		t.Fatalf("after a reload to no budget: %v", err)
	}
	said() // released

	// Held a moment before midnight (UTC), it goes once the day is the next.
	g.SetLimit(2)
	at(time.Date(2026, 11, 27, 23, 59, 59, 900_000_000, time.UTC))
	go func() { passed <- g.Wait(ctx, "w") }()
	said()
	at(time.Date(2026, 11, 28, 0, 0, 1, 0, time.UTC))
	if err := <-passed; err != nil {
		t.Fatalf("the next day: %v", err)
	}
}
