package due

import (
	"container/heap"
	"time"
)

// Entry is when the thing named Key falls due.
type Entry struct {
	Key string
	At  time.Time
}

// Heap holds entries, soonest first. The zero Heap is empty and ready to use; it is
// not safe for concurrent use.
type Heap struct{ h entries }

// Add makes key due at at.
func (d *Heap) Add(key string, at time.Time) { heap.Push(&d.h, Entry{Key: key, At: at}) }

// Len is how many entries it holds.
func (d *Heap) Len() int { return len(d.h) }

// Soonest is the entry due first; ok is false when there is none.
func (d *Heap) Soonest() (e Entry, ok bool) {
	if len(d.h) == 0 {
		return Entry{}, false
	}
	return d.h[0], true
}

// Drop removes the soonest entry, if any.
func (d *Heap) Drop() {
	if len(d.h) > 0 {
		heap.Pop(&d.h)
	}
}

// PopDue removes and returns the soonest entry when it is due at now or before.
func (d *Heap) PopDue(now time.Time) (Entry, bool) {
	if len(d.h) == 0 || d.h[0].At.After(now) {
		return Entry{}, false
	}
	return heap.Pop(&d.h).(Entry), true
}

// entries is the container/heap under Heap.
type entries []Entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].At.Before(h[j].At) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(Entry)) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
