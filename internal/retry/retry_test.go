package retry

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestBackoffDoublesWithJitter: each wait lies in the upper half of a ceiling that
// doubles from Min and stops at Max; a longer Retry-After wins.
func TestBackoffDoublesWithJitter(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 1 * time.Second}
	for i, ceiling := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceiling *= time.Millisecond
		if w := b.Next(0); w < ceiling/2 || w > ceiling {
			t.Fatalf("wait %d is %v; want within [%v, %v]", i, w, ceiling/2, ceiling)
		}
	}
	if w := b.Next(3 * time.Second); w != 3*time.Second {
		t.Fatalf("with Retry-After 3s: %v", w)
	}
	seen := map[time.Duration]bool{}
	for range 20 {
		c := Backoff{Min: time.Second, Max: time.Second}
		seen[c.Next(0)] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 first waits were all %v: no jitter", seen)
	}
}

func TestAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"-3":                            0,
		"soon":                          0,
		"Thu, 26 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Thu, 26 Nov 2026 11:59:00 GMT": 0, // past
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := After(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep waited out an hour on an ended context")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep on a live context reported it ended")
	}
}
