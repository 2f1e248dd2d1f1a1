package proctest

import (
	"fmt"
	"testing"
	"time"
)

const (
	// eventuallyWithin is how long Eventually waits: far longer than anything it waits
	// for takes on a loaded machine.
	eventuallyWithin = 5 * time.Second
	// pollEvery is how often the helpers here look again.
	pollEvery = 20 * time.Millisecond
)

// Every test that waits for something to come about waits through these: they poll
// until a deadline, and never sleep a fixed time.

// Eventually polls cond until it holds, and fails the test saying what did not come
// about if it has not within five seconds.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, eventuallyWithin, what, cond)
}

// EventuallyWithin polls cond until it holds, and fails the test saying what did not
// come about if it has not within d.
func EventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	Within(t, d, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("timed out after %v waiting until %s", d, what)
	})
}

// Within polls check until it returns nil, and fails the test with its last error if
// it has not within d.
func Within(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	var err error
	if !Poll(d, pollEvery, func() bool { err = check(); return err == nil }) {
		t.Fatal(err)
	}
}

// Poll polls cond every so often until it holds or d has passed, and reports whether
// it held: for a test that says itself what is missing, or a cond too costly to run
// every 20 ms.
func Poll(d, every time.Duration, cond func() bool) bool {
	tick := time.NewTicker(every)
	defer tick.Stop()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}
