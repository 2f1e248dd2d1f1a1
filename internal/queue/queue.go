package queue

import "sync"

// Queue is an unbounded FIFO with one consumer. Its zero value is not usable; use New.
type Queue[T any] struct {
	wake chan struct{}

	mu       sync.Mutex // protects the fields below
	items    []T
	closing  bool
	handling bool // the consumer has a batch in hand
}

// New returns an empty, open queue.
func New[T any]() *Queue[T] {
	return &Queue[T]{wake: make(chan struct{}, 1)}
}

// Push queues v; it never blocks. After Close or Discard it drops v and returns false.
func (q *Queue[T]) Push(v T) bool {
	ok := q.PushQuiet(v)
	q.poke()
	return ok
}

// PushQuiet queues v without waking the consumer: v is handled with the batch the
// next Push or Wake brings. It never blocks; after Close or Discard it drops v and
// returns false.
func (q *Queue[T]) PushQuiet(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return false
	}
	q.items = append(q.items, v)
	return true
}

// Offer has now handle v on the caller's goroutine when the consumer is idle with
// nothing queued, so v goes out without a hand-off; what now leaves undone (its rest,
// with done false) is queued for the consumer, behind which all else waits. now must
// not block: it runs with the queue locked, and nothing is queued or handled until it
// returns. After Close or Discard, Offer drops v and returns false.
func (q *Queue[T]) Offer(v T, now func(T) (rest T, done bool)) bool {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return false
	}
	if !q.handling && len(q.items) == 0 {
		rest, done := now(v)
		if done {
			q.mu.Unlock()
			return true
		}
		v = rest
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.poke()
	return true
}

// Wake has the consumer handle what is queued, quietly or not.
func (q *Queue[T]) Wake() { q.poke() }

// Close stops intake; Drain returns once what was queued before is handled. It
// reports whether this call closed the queue (false if it was closed already).
func (q *Queue[T]) Close() bool {
	q.mu.Lock()
	first := !q.closing
	q.closing = true
	q.mu.Unlock()
	q.poke()
	return first
}

// Discard drops what is queued and closes the queue.
func (q *Queue[T]) Discard() {
	q.mu.Lock()
	q.closing = true
	q.items = nil
	q.mu.Unlock()
	q.poke()
}

// Drain hands batches to handle, in order, until the queue is closed and empty, or
// handle returns false (then the rest is discarded). Call it from the one consumer.
func (q *Queue[T]) Drain(handle func(batch []T) bool) {
	for range q.wake {
		q.mu.Lock()
		batch, closing := q.items, q.closing
		q.items = nil
		q.handling = len(batch) > 0
		q.mu.Unlock()
		if len(batch) > 0 {
			if !handle(batch) {
				q.Discard()
				return
			}
			q.mu.Lock()
			q.handling = false
			q.mu.Unlock()
		}
		if closing {
			q.mu.Lock()
			empty := len(q.items) == 0
			q.mu.Unlock()
			if empty {
				return
			}
			q.poke()
		}
	}
}

func (q *Queue[T]) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
