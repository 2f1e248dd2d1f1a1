package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Backoff is the waits of one loop. Its zero value waits nothing; set Min and Max.
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration // the ceiling of the next wait; 0: Min
}

// Next returns how long to wait before the next try: at random between half and all of
// a ceiling that starts at Min and doubles each time up to Max, or after, if a server
// asked for longer.
func (b *Backoff) Next(after time.Duration) time.Duration {
	if b.next == 0 {
		b.next = b.Min
	}
	ceiling := b.next
	b.next = min(2*b.next, b.Max)
	wait := ceiling
	if half := ceiling / 2; half > 0 {
		wait = half + rand.N(half+1)
	}
	return max(wait, after)
}

// Sleep waits d, or less if ctx ends first; it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// After is how long a response's Retry-After header asks to wait (delay-seconds, or an
// HTTP date, from now); 0 when it asks nothing or cannot be read.
func After(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
