package api

import (
	"context"
	"errors"
	"sync"
)

// refusals are the requests in flight the bus may refuse: when it refuses the console a
// subject (bus.PermissionError), each request waiting on it ends at once with the
// refusal, not at its timeout.
type refusals struct {
	mu      sync.Mutex
	next    int
	waiting map[string]map[int]context.CancelCauseFunc // by subject
}

// wait returns ctx, ended by a refusal of subject, and the func that stops watching.
func (f *refusals) wait(ctx context.Context, subject string) (context.Context, func()) {
	ctx, refuse := context.WithCancelCause(ctx)
	f.mu.Lock()
	if f.waiting == nil {
		f.waiting = map[string]map[int]context.CancelCauseFunc{}
	}
	if f.waiting[subject] == nil {
		f.waiting[subject] = map[int]context.CancelCauseFunc{}
	}
	f.next++
	id := f.next
	f.waiting[subject][id] = refuse
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		delete(f.waiting[subject], id)
		if len(f.waiting[subject]) == 0 {
			delete(f.waiting, subject)
		}
		f.mu.Unlock()
		refuse(nil)
	}
}

// refuse ends every request waiting on subject with err.
func (f *refusals) refuse(subject string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, refuse := range f.waiting[subject] {
		refuse(err)
	}
}

// refusal is the bus's refusal that ended ctx, or nil when ctx ended otherwise (or
// not at all).
func refusal(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return nil
	}
	return cause
}
