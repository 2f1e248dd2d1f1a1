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

// What is pushed quietly waits for the next Push or Wake, and then comes in order with
// it; Close hands it over too.
func TestQuietItemsComeWithTheNextWake(t *testing.T) {
	q := New[int]()
	batches := make(chan []int, 4)
	done := make(chan struct{})
	go func() {
		q.Drain(func(batch []int) bool {
			batches <- slices.Clone(batch)
			return true
		})
		close(done)
	}()
	q.PushQuiet(1)
	q.PushQuiet(2)
	select {
	case b := <-batches:
		t.Fatalf("a batch %v before any Push or Wake", b)
	default:
	}
	q.Push(3)
	if b := <-batches; !slices.Equal(b, []int{1, 2, 3}) {
		t.Fatalf("batch %v; want 1, 2, 3", b)
	}
	q.PushQuiet(4)
	q.Wake()
	if b := <-batches; !slices.Equal(b, []int{4}) {
		t.Fatalf("batch %v after Wake; want 4", b)
	}
	q.PushQuiet(5)
	q.Close()
	<-done
	if b := <-batches; !slices.Equal(b, []int{5}) {
		t.Fatalf("batch %v at Close; want 5", b)
	}
	if q.PushQuiet(6) {
		t.Fatal("PushQuiet after Close must refuse")
	}
}
