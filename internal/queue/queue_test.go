package queue

import (
	"slices"
	"sync"
	"testing"
)

func TestDrainDeliversInOrderThenStopsAfterClose(t *testing.T) {
	q := New[int]()
	var got []int
	done := make(chan struct{})
	go func() {
		q.Drain(func(batch []int) bool {
			got = append(got, batch...)
			return true
		})
		close(done)
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 10000 {
			q.Push(i)
		}
	}()
	wg.Wait()
	if !q.Close() || q.Close() {
		t.Fatal("Close must report the first close only")
	}
	if q.Push(-1) {
		t.Fatal("Push after Close must refuse")
	}
	<-done
	if len(got) != 10000 || !slices.IsSorted(got) {
		t.Fatalf("drained %d items, in order: %v", len(got), slices.IsSorted(got))
	}
}

func TestHandlerFailureDiscardsTheRest(t *testing.T) {
	q := New[string]()
	q.Push("a")
	q.Push("b")
	calls := 0
	q.Drain(func([]string) bool {
		calls++
		return false
	})
	if calls != 1 || q.Push("c") {
		t.Fatalf("calls %d; after a failure the queue must be closed", calls)
	}
}
