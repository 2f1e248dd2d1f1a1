// Package due keeps named things by when they fall due, soonest first, so that one
// timer armed for the soonest stands for all of them: a deadline costs a heap entry,
// not a timer of its own. An entry is never removed early: its owner skips it when it
// comes out and no longer matches what is due (answered, moved).
//
//	var h due.Heap
//	h.Add("q1", time.Now().Add(time.Second))
//	for e, ok := h.PopDue(time.Now()); ok; e, ok = h.PopDue(time.Now()) { … }
package due
