package node

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// TestSessionSpend: a native agent's usage lines, one with its cost and one without, add
// up to the session's spend, the second priced by [pricing]; the session.ended event
// and audit record carry it, and the tokens and dollars are counted by host, model and
// outcome. A model [pricing] does not know is named unpriced, not counted as free.
func TestSessionSpend(t *testing.T) {
	f := start(t, simHost("w", "")+`
[pricing."gpt-test"]
input_per_mtok = 2
output_per_mtok = 8
`)
	ended := endedEvents(t, f, "w")
	res := f.run("w", script(
		send(`{"type":"usage","model":"claude-test","input_tokens":1000,"output_tokens":200,"cost_usd":0.25}`),
		send(`{"type":"usage","model":"gpt-test","input_tokens":500000,"output_tokens":100000}`),
		send(`{"type":"usage","model":"gpt-test","input_tokens":500000,"output_tokens":25000,"cache_read_tokens":10}`),
		send(`{"type":"usage","model":"mystery","output_tokens":5}`),
		result))
	if !res.OK {
		t.Fatalf("session: %+v", res)
	}
	check := func(where string, s *wire.Spend) {
		t.Helper()
		// gpt-test: 1 M in at $2, 125 k out at $8 (the 10 cached read at the input's $2).
		want := 0.25 + 2 + 1 + 10*2/1e6
		if s == nil || s.InputTokens != 1_001_000 || s.OutputTokens != 125_205 || s.CacheReadTokens != 10 || math.Abs(s.CostUSD-want) > 1e-9 ||
			len(s.Models) != 3 || len(s.Unpriced) != 1 || s.Unpriced[0] != "mystery" {
			t.Fatalf("%s: spend %+v; want 1001000 in, 125205 out, $%v, mystery unpriced", where, s, want)
		}
	}
	e := <-ended
	check("session.ended", e.Spend)
	records, err := store.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
	if err != nil {
		t.Fatal(err)
	}
	var rec *wire.AuditRecord
	for _, r := range records {
		if r.Kind == "session.ended" {
			rec = r
		}
	}
	if rec == nil {
		t.Fatal("no session.ended audit record")
	}
	check("the audit record", rec.Spend)
	// Fleet-wide, the host's day counts the session.
	proctest.Within(t, 10*time.Second, func() error {
		days, err := store.ReadSpend(context.Background(), f.n.Bus.Conn, time.Now())
		if err != nil {
			return err
		}
		if len(days) != 1 || days[0].Host != "w" || days[0].Sessions != 1 || days[0].Unpriced != 1 || math.Abs(days[0].CostUSD-rec.Spend.CostUSD) > 1e-9 {
			return fmt.Errorf("the daily spend: %+v; want w's one session at $%v", days, rec.Spend.CostUSD)
		}
		return nil
	})
	m := f.n.Metrics
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(m.SessionTokens.WithLabelValues("w", "gpt-test", "input", "ok")), 1_000_000, "gpt-test input tokens"},
		{testutil.ToFloat64(m.SessionTokens.WithLabelValues("w", "gpt-test", "cache_read", "ok")), 10, "gpt-test cache reads"},
		{testutil.ToFloat64(m.SessionTokens.WithLabelValues("w", "claude-test", "output", "ok")), 200, "claude-test output tokens"},
		{testutil.ToFloat64(m.SessionCost.WithLabelValues("w", "claude-test", "ok")), 0.25, "claude-test's dollars"},
		{testutil.ToFloat64(m.SessionCost.WithLabelValues("w", "gpt-test", "ok")), 3.00002, "gpt-test's dollars"},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: %v; want %v", c.what, c.got, c.want)
		}
	}
}
