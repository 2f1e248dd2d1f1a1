package store

import (
	"strings"
	"testing"
	"time"
)

// A search's --since or --until: a duration before now, days, or an RFC 3339 time;
// anything else says what it takes.
func TestParseTimeBound(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"24h":                  now.Add(-24 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"30d":                  time.Date(2026, 10, 28, 12, 0, 0, 0, time.UTC),
		"0d":                   now,
		"2026-11-26T09:00:00Z": time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC),
	} {
		if got, err := ParseTimeBound(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTimeBound(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "3 d", "d"} {
		if _, err := ParseTimeBound(bad, now); err == nil || !strings.Contains(err.Error(), "want a duration before now (30d, 24h, 90m)") {
			t.Errorf("ParseTimeBound(%q): %v; want it refused, saying what it takes", bad, err)
		}
	}
}
