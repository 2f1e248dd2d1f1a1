package router

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/config"
)

func queued(id string) *session { return &session{host: "w", start: &agent.StartSession{Session: id}} }

// TestPoolRunsQueuedSessionsOnFreeProcesses: sessions run in the order queued, each on
// the idle process used last, else on a new one while the pool has room; a full pool
// leaves them queued.
func TestPoolRunsQueuedSessionsOnFreeProcesses(t *testing.T) {
	p := newPool(&config.Host{Name: "w", Sessions: config.Sessions{Pool: 2}})
	spawned := 0
	spawn := func() *actor.PID { spawned++; return actor.NewPID("local", "agent"+string(rune('0'+spawned))) }
	if pid, s := p.next(spawn); pid != nil || s != nil {
		t.Fatal("an empty queue gave a session")
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		p.enqueue(queued(id))
	}
	a, s1 := p.next(spawn)
	b, s2 := p.next(spawn)
	if s1.start.Session != "s1" || s2.start.Session != "s2" || spawned != 2 || a.Id == b.Id {
		t.Fatalf("ran %s on %v and %s on %v after %d spawns; want s1 and s2 on two new processes", s1.start.Session, a, s2.start.Session, b, spawned)
	}
	if pid, s := p.next(spawn); s != nil || pid != nil || spawned != 2 {
		t.Fatal("a full pool ran a third session")
	}
	if got, _ := p.sessionEnded(a, true); got != s1 {
		t.Fatalf("a's session %v; want s1", got)
	}
	if pid, s := p.next(spawn); pid.Id != a.Id || s.start.Session != "s3" || spawned != 2 {
		t.Fatalf("s3 ran on %v; want a, idle again", pid)
	}
	if got, _ := p.sessionEnded(b, false); got != s2 || len(p.idle) != 0 {
		t.Fatalf("b, not reusable: its session %v, idle %v", got, p.idle)
	}
	if !p.runsHere("s3") {
		t.Fatal("s3 is not known to run here")
	}
}

// TestPoolRequeuesFirstOrLast: a session whose process was gone before it began goes
// first; a retry goes last.
func TestPoolRequeuesFirstOrLast(t *testing.T) {
	p := newPool(&config.Host{Name: "w", Sessions: config.Sessions{Pool: 1}})
	p.enqueue(queued("s1"))
	p.requeue(queued("retry"), false)
	p.requeue(queued("fresh"), true)
	var order []string
	for _, s := range p.queue {
		order = append(order, s.start.Session)
	}
	if len(order) != 3 || order[0] != "fresh" || order[1] != "s1" || order[2] != "retry" {
		t.Fatalf("queue %v; want fresh, s1, retry", order)
	}
}

// TestPoolForgetsAGoneProcess: a process that is gone leaves the pool, idle or busy, and
// the session it held is returned; another pool's process is not its own.
func TestPoolForgetsAGoneProcess(t *testing.T) {
	p := newPool(&config.Host{Name: "w", Sessions: config.Sessions{Pool: 2}})
	pids := []*actor.PID{actor.NewPID("local", "a"), actor.NewPID("local", "b")}
	i := 0
	spawn := func() *actor.PID { i++; return pids[i-1] }
	p.enqueue(queued("s1"))
	p.enqueue(queued("s2"))
	p.next(spawn)
	p.next(spawn)
	p.sessionEnded(pids[0], true) // a idle, b busy with s2
	if s, ours := p.gone(pids[0]); !ours || s != nil || len(p.idle) != 0 || len(p.procs) != 1 {
		t.Fatalf("idle a gone: %v %v, idle %v, procs %v", s, ours, p.idle, p.procs)
	}
	if s, ours := p.gone(pids[1]); !ours || s == nil || s.start.Session != "s2" || len(p.busy) != 0 || len(p.procs) != 0 {
		t.Fatalf("busy b gone: %v %v", s, ours)
	}
	if _, ours := p.gone(actor.NewPID("local", "other")); ours {
		t.Fatal("another pool's process was taken for this one's")
	}
}

// TestPoolRetiresOnReload: after a reload changes the host, the idle processes are
// handed back to be stopped at once, and a busy one stops when its session ends instead
// of taking the next; a process started after the reload is reused as usual.
func TestPoolRetiresOnReload(t *testing.T) {
	p := newPool(&config.Host{Name: "w", Sessions: config.Sessions{Pool: 3}})
	pids := []*actor.PID{actor.NewPID("local", "a"), actor.NewPID("local", "b"), actor.NewPID("local", "c")}
	i := 0
	spawn := func() *actor.PID { i++; return pids[i-1] }
	p.enqueue(queued("s1"))
	p.enqueue(queued("s2"))
	p.next(spawn)
	p.next(spawn)
	p.sessionEnded(pids[0], true) // a idle, b busy with s2
	if idle := p.retire(); len(idle) != 1 || idle[0].Id != "a" || len(p.idle) != 0 {
		t.Fatalf("retire gave %v, left idle %v; want a to stop, nothing idle", idle, p.idle)
	}
	if s, stale := p.sessionEnded(pids[1], true); s == nil || s.start.Session != "s2" || !stale || len(p.idle) != 0 {
		t.Fatalf("b's session ended: %v stale %v, idle %v; want s2, stale, b not idle", s, stale, p.idle)
	}
	p.gone(pids[0])
	p.gone(pids[1])
	p.enqueue(queued("s3"))
	if pid, _ := p.next(spawn); pid.Id != "c" {
		t.Fatalf("s3 ran on %v; want a new process", pid)
	}
	if _, stale := p.sessionEnded(pids[2], true); stale || len(p.idle) != 1 {
		t.Fatalf("c, started after the reload: stale %v, idle %v; want it idle again", stale, p.idle)
	}
}

// TestPoolRemembersEndedTasksForAWhile: a task that ended here is known as such until
// it is forgotten, by its end's time; one that no longer runs here is not running.
func TestPoolRemembersEndedTasksForAWhile(t *testing.T) {
	p := newPool(&config.Host{Name: "w", Sessions: config.Sessions{Pool: 1}})
	now := time.Now()
	p.hold("old")
	p.hold("new")
	p.leave("old")
	p.endedAt("old", now.Add(-endedMemory-time.Second))
	p.leave("new")
	p.endedAt("new", now)
	if p.runsHere("old") || p.runsHere("new") || !p.endedHere("old") || !p.endedHere("new") {
		t.Fatal("ended tasks: want both ended here, neither running")
	}
	p.forgetEnded(now.Add(-endedMemory))
	if p.endedHere("old") || !p.endedHere("new") {
		t.Fatal("forgetEnded: want the old one forgotten, the new one kept")
	}
}
