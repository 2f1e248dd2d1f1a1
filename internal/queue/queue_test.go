package queue

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
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

// Offer does the work on the caller's goroutine only when nothing is queued or being
// handled, so what it does there never overtakes what the consumer has: every item
// comes out once, in order, however the work splits between the two.
func TestOfferNeverOvertakesTheConsumer(t *testing.T) {
	synctest.Test(t, testOfferNeverOvertakesTheConsumer)
}

func testOfferNeverOvertakesTheConsumer(t *testing.T) {
	q := New[int]()
	var mu sync.Mutex
	var out []int
	emit := func(v int) {
		mu.Lock()
		out = append(out, v)
		mu.Unlock()
	}
	done := make(chan struct{})
	go func() {
		q.Drain(func(batch []int) bool {
			for _, v := range batch {
				emit(v)
			}
			return true
		})
		close(done)
	}()
	direct := 0
	for i := range 20000 {
		if i%100 == 0 {
			synctest.Wait() // now and then, the consumer catches up and goes idle
		}
		q.Offer(i, func(v int) (int, bool) {
			if v%3 == 0 { // the pipe is full: the consumer writes it
				return v, false
			}
			direct++
			emit(v)
			return 0, true
		})
	}
	q.Close()
	<-done
	if len(out) != 20000 || !slices.IsSorted(out) {
		t.Fatalf("%d items came out, in order: %v", len(out), slices.IsSorted(out))
	}
	if direct == 0 {
		t.Fatal("no item was done on the caller's goroutine")
	}
	if q.Offer(-1, func(int) (int, bool) { t.Fatal("now called after Close"); return 0, true }) {
		t.Fatal("Offer after Close must refuse")
	}
}

// While the consumer has a batch in hand, Offer queues without calling now; what now
// leaves undone goes to the consumer.
func TestOfferQueuesWhileTheConsumerIsBusy(t *testing.T) {
	q := New[string]()
	batches := make(chan []string, 4)
	release := make(chan struct{})
	go q.Drain(func(batch []string) bool {
		batches <- slices.Clone(batch)
		<-release
		return true
	})
	defer q.Close()
	q.Offer("ab", func(s string) (string, bool) { return s[1:], false })
	if b := <-batches; !slices.Equal(b, []string{"b"}) {
		t.Fatalf("batch %v; want what now left, b", b)
	}
	called := false
	q.Offer("c", func(s string) (string, bool) { called = true; return "", true })
	if called {
		t.Fatal("now was called while the consumer had a batch in hand")
	}
	release <- struct{}{}
	if b := <-batches; !slices.Equal(b, []string{"c"}) {
		t.Fatalf("batch %v; want c", b)
	}
	release <- struct{}{}
}
