package store

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// TestDailySpendFromManyNodesAtOnce: sessions of one host ending on many nodes at once
// each add to the day's total, none lost to another's write; another host and another
// day keep totals of their own, and a read since a day leaves the days before out.
func TestDailySpendFromManyNodesAtOnce(t *testing.T) {
	b := open(t)
	ctx := context.Background()
	st, err := OpenSpend(ctx, b.JS)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	yesterday := today.AddDate(0, 0, -1)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := &wire.Spend{InputTokens: 100, OutputTokens: 10, CostUSD: 0.25}
			if i%4 == 0 {
				s.Unpriced = []string{"local"}
			}
			if err := st.Add(ctx, "w", today, s); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, add := range []struct {
		host string
		day  time.Time
	}{{"other", today}, {"w", yesterday}} {
		if err := st.Add(ctx, add.host, add.day, &wire.Spend{InputTokens: 1, CostUSD: 1}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := ReadSpend(ctx, b.Conn, yesterday)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Day != yesterday.Format(time.DateOnly) || all[1].Host != "other" || all[2].Host != "w" {
		t.Fatalf("read %+v; want yesterday's w, then today's other and w", all)
	}
	w := all[2]
	if w.Sessions != n || w.InputTokens != n*100 || w.OutputTokens != n*10 || math.Abs(w.CostUSD-n*0.25) > 1e-9 || w.Unpriced != n/4 {
		t.Fatalf("today's w: %+v; want %d sessions, each counted once", w, n)
	}
	if since, err := ReadSpend(ctx, b.Conn, today); err != nil || len(since) != 2 {
		t.Fatalf("read since today: %+v, %v; want today's two hosts", since, err)
	}
}
