package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/wire"
)

// QueuedTask is a task the work queue holds: waiting for a node, or taken by one and
// not finished yet (a finished task leaves the queue).
type QueuedTask struct {
	wire.Task
	// Queue is the host or pipeline whose queue holds it (agentmux.task.<queue>).
	Queue  string    `json:"queue"`
	Stored time.Time `json:"stored"` // when the server queued it
}

// ReadTasks reads the work queue, oldest first, with message gets (no consumer: a
// reader of the bus may list it). A message that is not a task is listed with its
// subject and no prompt.
func ReadTasks(ctx context.Context, nc *nats.Conn) ([]QueuedTask, error) {
	var out []QueuedTask
	err := scan(ctx, nc, wire.TaskStream, wire.TaskSubjects, func(m *nats.Msg, stored time.Time) error {
		t := QueuedTask{Queue: strings.TrimPrefix(m.Subject, wire.TaskSubject("")), Stored: stored}
		_ = json.Unmarshal(m.Data, &t.Task) // a run of a pipeline has an id and params, not a prompt
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bus: list tasks: %w", err)
	}
	return out, nil
}
