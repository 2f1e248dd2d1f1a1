package proctest

import (
	"testing"
	"time"
)

func TestPollReportsWhetherItHeld(t *testing.T) {
	calls := 0
	if !Poll(time.Minute, time.Millisecond, func() bool { calls++; return calls == 3 }) {
		t.Fatal("Poll said a cond that came to hold never did")
	}
	if calls != 3 {
		t.Errorf("cond ran %d times; want it run until it held, 3", calls)
	}
	if Poll(10*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll said a cond that never held did")
	}
	// The deadline's own look counts: a cond that holds by then is reported.
	start := time.Now()
	if !Poll(10*time.Millisecond, time.Hour, func() bool { return time.Since(start) >= 10*time.Millisecond }) {
		t.Error("a cond that held at the deadline was reported as never holding")
	}
}
