package due

import (
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
