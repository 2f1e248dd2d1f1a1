package due

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

func TestEntriesComeOutSoonestFirstWhenDue(t *testing.T) {
	var h Heap
	t0 := time.Now()
	h.Add("c", t0.Add(3*time.Second))
	h.Add("a", t0.Add(time.Second))
	h.Add("b", t0.Add(2*time.Second))
	if e, ok := h.Soonest(); !ok || e.Key != "a" {
		t.Fatalf("soonest %v %v; want a", e, ok)
	}
	if _, ok := h.PopDue(t0); ok {
		t.Fatal("an entry came out before it was due")
	}
	var got []string
	for e, ok := h.PopDue(t0.Add(2 * time.Second)); ok; e, ok = h.PopDue(t0.Add(2 * time.Second)) {
		got = append(got, e.Key)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" || h.Len() != 1 {
		t.Fatalf("due by t0+2s: %v, %d left; want a, b and one left", got, h.Len())
	}
	h.Drop()
	h.Drop() // empty: nothing to drop
	if _, ok := h.Soonest(); ok || h.Len() != 0 {
		t.Fatal("the heap is not empty after dropping its last entry")
	}
}

// Entries added in any order come out soonest first, equal times included, and a
// heap in use allocates nothing to add and pop one.
func TestManyEntriesComeOutInOrder(t *testing.T) {
	var h Heap
	t0 := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		h.Add(strconv.Itoa(i), t0.Add(time.Duration(r.IntN(500))*time.Millisecond))
	}
	last := t0
	for n := 0; ; n++ {
		e, ok := h.PopDue(t0.Add(time.Second))
		if !ok {
			if n != 1000 || h.Len() != 0 {
				t.Fatalf("%d entries came out, %d left; want 1000 and none", n, h.Len())
			}
			break
		}
		if e.At.Before(last) {
			t.Fatalf("entry %d (%s) came out at %v, after one due later", n, e.Key, e.At.Sub(t0))
		}
		last = e.At
	}
	for i := range 64 { // grown once: the slice is reused
		h.Add(strconv.Itoa(i), t0)
	}
	for h.Len() > 0 {
		h.Drop()
	}
	if allocs := testing.AllocsPerRun(100, func() {
		h.Add("k", t0)
		h.PopDue(t0)
	}); allocs != 0 {
		t.Errorf("adding and popping an entry allocated %.0f times; want 0", allocs)
	}
}
