package dispatch

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// goroutineID reads the running goroutine's number from its stack trace's header.
func goroutineID() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// One mailbox after another runs on the same few goroutines, which keep their stacks;
// the default dispatcher would start 500.
func TestMailboxesRunOnLongLivedWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(4, 300)
		defer p.Stop()
		seen := map[uint64]bool{}
		for range 500 {
			synctest.Wait() // the workers are idle
			p.Schedule(func() { seen[goroutineID()] = true })
		}
		synctest.Wait()
		if len(seen) != 4 {
			t.Fatalf("500 mailboxes ran on %d goroutines; want the 4 workers", len(seen))
		}
	})
}

// With every worker busy, a mailbox runs on a goroutine of its own: Schedule, called
// from an actor's send, never waits for a worker.
func TestScheduleNeverWaitsForABusyPool(t *testing.T) {
	p := New(2, 300)
	release := make(chan struct{})
	for range 2 {
		p.Schedule(func() { <-release })
	}
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("a mailbox scheduled while every worker was busy did not run")
	}
	close(release)
	p.Stop()
}

// Stop waits for the mailboxes being run; a mailbox scheduled after it still runs.
func TestStopWaitsForRunningMailboxes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, 300)
		synctest.Wait() // the workers are idle
		var finished atomic.Bool
		release := make(chan struct{})
		p.Schedule(func() {
			<-release
			finished.Store(true)
		})
		stopped := make(chan struct{})
		go func() {
			p.Stop()
			close(stopped)
		}()
		synctest.Wait() // Stop waits for the worker, which waits for release
		select {
		case <-stopped:
			t.Fatal("Stop returned while a worker was still running a mailbox")
		default:
		}
		close(release)
		<-stopped
		if !finished.Load() {
			t.Fatal("Stop returned before the running mailbox finished")
		}
		ran := make(chan struct{})
		p.Schedule(func() { close(ran) })
		<-ran
		p.Stop() // idempotent
	})
}

type counter struct {
	got  []int
	done chan []int
}

func (c *counter) Receive(ctx actor.Context) {
	if n, ok := ctx.Message().(int); ok {
		c.got = append(c.got, n)
		if n == 9999 {
			c.done <- c.got
		}
	}
}

// An actor on the pool gets every message, in order, as on protoactor's own
// dispatcher; the pool stops after the actor system, with nothing left running.
func TestAnActorOnThePoolGetsEveryMessageInOrder(t *testing.T) {
	p := New(4, 10)
	system := actor.NewActorSystem()
	done := make(chan []int, 1)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &counter{done: done} }, actor.WithDispatcher(p)))
	for i := range 10000 {
		system.Root.Send(pid, i)
	}
	got := <-done
	for i, n := range got {
		if n != i {
			t.Fatalf("message %d was %d: out of order", i, n)
		}
	}
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	system.Shutdown()
	p.Stop()
}
