package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// BenchmarkNodeDeathToResumedLine measures what a node's death costs a session that
// checkpoints, on a fleet of three NATS servers and two nodes: the time from the SIGKILL
// of the node running it to its resume on the other node (session.resumed), and to the
// resumed agent's first line there (its next checkpoint kept); and the checkpoints lost
// (taken before the kill, and not the one it went on from). Each op is one death; the
// node killed is started again, untimed, for the next.
//
//	go test ./cmd/runtime -run '^$' -bench NodeDeathToResumedLine -benchtime 5x
func BenchmarkNodeDeathToResumedLine(b *testing.B) {
	f := startFleet(b, fmt.Sprintf("[hosts.w]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nstop_grace = \"2s\"\n", stepper))
	nc, js := f.conn(b)
	nodes := map[string]*proc{"agents1": f.node(b, "agents1"), "agents2": f.node(b, "agents2")}
	resumed := events[wire.SessionPaused](b, nc, wire.EventSubject("w", "*", wire.EventSessionResumed))
	saved := events[wire.CheckpointSaved](b, nc, wire.EventSubject("w", "*", wire.EventCheckpointSaved))
	var toResume, toLine time.Duration
	lost := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		id := fmt.Sprintf("t-death-%d", i)
		submitTasks(b, js, "w", "take three steps", id)
		var first wire.Checkpoint
		proctest.EventuallyWithin(b, time.Minute, id+"'s first checkpoint", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			list, err := store.ListCheckpoints(ctx, nc, id)
			if err == nil && len(list) == 1 {
				first = *list[0]
			}
			return first.Seq == 1
		})
		emptied(resumed)
		emptied(saved)
		victim := first.Node
		b.StartTimer()
		start := time.Now()
		kill(b, nodes[victim])
		var r wire.SessionPaused
		select {
		case r = <-resumed:
			toResume += time.Since(start)
		case <-time.After(2 * time.Minute):
			b.Fatalf("%s was not resumed within 2 minutes of its node's death", id)
		}
		for line := false; !line; {
			select {
			case c := <-saved:
				if line = c.Seq > first.Seq; line {
					toLine += time.Since(start)
				}
			case <-time.After(time.Minute):
				b.Fatalf("%s's resumed agent kept no checkpoint within a minute of its resume", id)
			}
		}
		b.StopTimer()
		lost += first.Seq - r.Checkpoint
		nodes[victim] = f.node(b, victim)
		b.StartTimer()
	}
	b.ReportMetric(toResume.Seconds()/float64(b.N), "s-to-resume/op")
	b.ReportMetric(toLine.Seconds()/float64(b.N), "s-to-first-line/op")
	b.ReportMetric(float64(lost)/float64(b.N), "checkpoints-lost/op")
}

// emptied empties ch of what it holds now.
func emptied[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
