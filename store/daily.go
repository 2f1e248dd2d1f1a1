package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// dailyRecheck is how often a held host's day is read again without a change seen: a
// safety net under the watch.
const dailyRecheck = 30 * time.Second

// Day is host's spend on the day of at (UTC); an empty day when nothing was counted.
func (st *SpendStore) Day(ctx context.Context, host string, at time.Time) (*wire.DailySpend, error) {
	day := wire.DailySpend{Day: at.UTC().Format(time.DateOnly), Host: host}
	if _, _, err := getJSON(ctx, st.kv, wire.SpendKey(at, host), "daily spend", &day); err != nil {
		return nil, err
	}
	return &day, nil
}

// Raise adds r to host's daily budget on the day of r.At, or with r.Reset releases what
// the day spent so far, as Add counts a session: read, added to, and written back only
// if no other node wrote it meanwhile.
func (st *SpendStore) Raise(ctx context.Context, host string, r wire.DailyRaise) (*wire.DailySpend, error) {
	at := time.UnixMilli(r.At)
	key := wire.SpendKey(at, host)
	for range spendTries {
		day := wire.DailySpend{Day: at.UTC().Format(time.DateOnly), Host: host}
		rev, _, err := getJSON(ctx, st.kv, key, "daily spend", &day)
		if err != nil {
			return nil, err
		}
		if r.Reset {
			r.USD = max(day.CostUSD-day.ReleasedUSD, 0)
			day.ReleasedUSD = day.CostUSD
		} else {
			day.RaisedUSD += r.USD
		}
		day.Raises = append(day.Raises, r)
		data, _ := json.Marshal(&day)
		if rev == 0 {
			_, err = st.kv.Create(ctx, key, data)
		} else {
			_, err = st.kv.Update(ctx, key, data, rev)
		}
		switch {
		case err == nil:
			return &day, nil
		case errors.Is(err, jetstream.ErrKeyExists) || casConflict(err):
			continue
		default:
			return nil, fmt.Errorf("store: raise %s's budget of %s: %w", host, day.Day, err)
		}
	}
	return nil, fmt.Errorf("store: raise %s's budget: %d other writes came first; raise it again", host, spendTries)
}

// DailyGate holds a host's queued tasks while what its sessions cost today (UTC),
// fleet-wide, has reached [budgets.daily] and what people raised it by today: they
// wait in the queue, for the next day or a raise.
type DailyGate struct {
	spend *SpendStore
	limit atomic.Uint64 // math.Float64bits of the daily budget in US dollars; 0: none
	mu    sync.Mutex
	reset chan struct{} // closed when the limit changes: the held hosts look again
	// Held is told when a host's tasks start to wait (why says so) and when they no
	// longer do (why is "").
	Held func(host, why string)
	// Now is the clock (tests set it).
	Now func() time.Time
}

// NewDailyGate is a gate of usd a host and day over spend.
func NewDailyGate(spend *SpendStore, usd float64) *DailyGate {
	g := &DailyGate{spend: spend, Held: func(string, string) {}, Now: time.Now, reset: make(chan struct{})}
	g.SetLimit(usd)
	return g
}

// SetLimit sets the daily budget (a manifest reload); 0 holds nothing. The hosts held
// look again at once.
func (g *DailyGate) SetLimit(usd float64) {
	g.limit.Store(math.Float64bits(usd))
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.reset)
	g.reset = make(chan struct{})
}

func (g *DailyGate) resetChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reset
}

// Limit is the daily budget without today's raises.
func (g *DailyGate) Limit() float64 { return math.Float64frombits(g.limit.Load()) }

// Wait returns once host may start another task: at once while its day is under its
// budget; else when a raise or a new day lets it, or ctx is done (its error).
func (g *DailyGate) Wait(ctx context.Context, host string) error {
	held := false
	defer func() {
		if held {
			g.Held(host, "")
		}
	}()
	for {
		limit := g.Limit()
		if limit <= 0 {
			return nil
		}
		reset := g.resetChan()
		now := g.Now()
		// Watched before it is read: a raise written in between is not missed.
		key := wire.SpendKey(now, host)
		var updates <-chan jetstream.KeyValueEntry
		w, werr := g.spend.kv.Watch(ctx, key, jetstream.UpdatesOnly())
		if werr == nil {
			updates = w.Updates()
		}
		err := g.check(ctx, host, now, limit, &held)
		if err == nil || !errors.Is(err, errHeld) {
			if werr == nil {
				_ = w.Stop()
			}
			return err
		}
		// Until a write to the day, the next day (UTC), a new limit, or the recheck.
		midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		timer := time.NewTimer(min(midnight.Sub(now), dailyRecheck))
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-updates:
		case <-reset:
		}
		timer.Stop()
		if werr == nil {
			_ = w.Stop()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// errHeld says the host's tasks wait.
var errHeld = errors.New("held")

// check returns nil when host may start a task on the day of now, and errHeld when it
// may not (telling Held once).
func (g *DailyGate) check(ctx context.Context, host string, now time.Time, limit float64, held *bool) error {
	day, err := g.spend.Day(ctx, host, now)
	if err == nil && !day.Held(limit) {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	why := fmt.Sprintf("host %s's daily spend could not be read (%v); its tasks wait until it can", host, err)
	if err == nil {
		why = fmt.Sprintf("host %s spent $%.2f of its $%s daily budget today (UTC); its tasks wait in the queue until tomorrow, a raise (agentmux budget raise) or a reset (agentmux budget reset)",
			host, day.CostUSD-day.ReleasedUSD, wire.Dollars(limit+day.RaisedUSD))
	}
	if !*held {
		*held = true
		g.Held(host, why)
	}
	return errHeld
}

// RaiseDaily asks the fleet to raise host's daily budget for today by raise, in
// person's name (a node takes it: wire.BudgetRaiseSubject), and returns the node's
// answer: the day after the raise, or why it was refused.
func RaiseDaily(ctx context.Context, nc *nats.Conn, host, person string, raise *wire.BudgetRaise) (*wire.BudgetRaiseReply, error) {
	data, _ := json.Marshal(raise)
	msg, err := nc.RequestWithContext(ctx, wire.BudgetRaiseSubject(host, person), data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, errors.New("no node took the raise: is `agentmux up` running with this manifest?")
		}
		return nil, err
	}
	var reply wire.BudgetRaiseReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, fmt.Errorf("the node's answer is not JSON (%v): %q", err, msg.Data)
	}
	return &reply, nil
}
