package dispatch

import "sync"

// Pool is a protoactor dispatcher (actor.Dispatcher) whose mailboxes run on a fixed
// number of long-lived workers.
type Pool struct {
	work       chan func() // unbuffered: a send succeeds only into an idle worker's hands
	stop       chan struct{}
	stopOnce   sync.Once
	workers    sync.WaitGroup
	throughput int
}

// New starts workers goroutines. throughput is how many messages a mailbox handles
// before it yields, as protoactor's own dispatchers take it.
func New(workers, throughput int) *Pool {
	p := &Pool{work: make(chan func()), stop: make(chan struct{}), throughput: throughput}
	p.workers.Add(workers)
	for range workers {
		go p.run()
	}
	return p
}

func (p *Pool) run() {
	defer p.workers.Done()
	for {
		select {
		case fn := <-p.work:
			fn()
		case <-p.stop:
			return
		}
	}
}

// Schedule runs fn, a mailbox's run, on an idle worker, or on a goroutine of its own
// when none is idle or the pool has stopped. It never waits.
func (p *Pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
	default:
		go fn()
	}
}

// Throughput is how many messages a mailbox handles before it yields.
func (p *Pool) Throughput() int { return p.throughput }

// Stop ends the workers, waiting for those busy with a mailbox to finish it. Mailboxes
// scheduled after it run on goroutines of their own. Stop it after the actor system
// that uses it has shut down; it is idempotent.
func (p *Pool) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.workers.Wait()
}
