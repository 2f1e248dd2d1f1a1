package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmux/agentmux/wire"
)

// QueuedTask is a task the work queue holds: waiting for a node, or taken by one and
// not finished yet (a finished task leaves the queue).
type QueuedTask struct {
	wire.Task
	// Queue is the host or pipeline whose queue holds it (agentmux.task.<queue>).
	Queue  string    `json:"queue"`
	Stored time.Time `json:"stored"` // when the server queued it
	Seq    uint64    `json:"seq"`    // its place in the queue's stream (RemoveTask)
}

// ReadTasks reads the work queue, oldest first, with message gets (no consumer: a
// reader of the bus may list it). A message that is not a task is listed with its
// subject and no prompt.
func ReadTasks(ctx context.Context, nc *nats.Conn) ([]QueuedTask, error) {
	var out []QueuedTask
	err := scan(ctx, nc, wire.TaskStream, wire.TaskSubjects, func(m *storedMsg) error {
		queue, _, _ := wire.ParseTaskSubject(m.msg.Subject)
		t := QueuedTask{Queue: queue, Stored: m.time, Seq: m.seq}
		_ = json.Unmarshal(m.msg.Data, &t.Task) // a run of a pipeline has an id and params, not a prompt
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	return out, nil
}

// RemoveTask takes the task at seq out of the work queue, before any node started it:
// `agentmux cancel` of a task that waits.
func RemoveTask(ctx context.Context, js jetstream.JetStream, seq uint64) error {
	s, err := js.Stream(ctx, wire.TaskStream)
	if err == nil {
		err = s.DeleteMsg(ctx, seq)
	}
	if err != nil {
		return fmt.Errorf("store: remove task %d from the queue: %w", seq, err)
	}
	return nil
}
