// Package retry paces the loops that try something again (declaring streams and
// buckets, reading the audit, acknowledging a task, delivering a webhook): each wait
// doubles from Min to Max and is drawn at random from its upper half, so that nodes
// that failed together do not all try again together; a server that says how long to
// wait (Retry-After) is waited for at least that long.
//
//	b := retry.Backoff{Min: 250 * time.Millisecond, Max: 5 * time.Second}
//	for {
//		if err = try(); err == nil || !transient(err) {
//			break
//		}
//		if !retry.Sleep(ctx, b.Next(0)) {
//			break // ctx ended
//		}
//	}
package retry
