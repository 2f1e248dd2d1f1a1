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
