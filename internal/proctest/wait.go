package proctest

import (
	"testing"
	"time"
)

// eventuallyWithin is how long Eventually waits: far longer than anything it waits for
// takes on a loaded machine.
const eventuallyWithin = 5 * time.Second

// Eventually polls cond until it holds, and fails the test saying what did not come
// about if it has not within five seconds.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(eventuallyWithin)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// Within polls check until it returns nil, and fails the test with its last error if
// it has not within d.
func Within(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(d)
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal(err)
		}
	}
}
