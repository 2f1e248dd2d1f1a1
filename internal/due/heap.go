package due

import "time"

// Entry is when the thing named Key falls due.
type Entry struct {
	Key string
	At  time.Time
}

// Heap holds entries, soonest first: a binary heap of Entry values, so that adding and
// popping one allocates nothing beyond the slice's growth (container/heap would box
// each entry in an interface). The zero Heap is empty and ready to use; it is not safe
// for concurrent use.
type Heap struct{ h []Entry }

// Add makes key due at at.
func (d *Heap) Add(key string, at time.Time) {
	d.h = append(d.h, Entry{Key: key, At: at})
	d.up(len(d.h) - 1)
}

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
		d.pop()
	}
}

// PopDue removes and returns the soonest entry when it is due at now or before.
func (d *Heap) PopDue(now time.Time) (Entry, bool) {
	if len(d.h) == 0 || d.h[0].At.After(now) {
		return Entry{}, false
	}
	return d.pop(), true
}

// pop removes the soonest entry; the heap is not empty.
func (d *Heap) pop() Entry {
	e, last := d.h[0], len(d.h)-1
	d.h[0] = d.h[last]
	d.h[last] = Entry{} // the key is not kept alive by the backing array
	d.h = d.h[:last]
	d.down(0)
	return e
}

func (d *Heap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !d.h[i].At.Before(d.h[parent].At) {
			return
		}
		d.h[i], d.h[parent] = d.h[parent], d.h[i]
		i = parent
	}
}

func (d *Heap) down(i int) {
	for n := len(d.h); ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && d.h[l].At.Before(d.h[least].At) {
			least = l
		}
		if r < n && d.h[r].At.Before(d.h[least].At) {
			least = r
		}
		if least == i {
			return
		}
		d.h[i], d.h[least] = d.h[least], d.h[i]
		i = least
	}
}
