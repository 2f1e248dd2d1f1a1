package wire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nuid"
)

// Task asks a node to run one session on a host.
type Task struct {
	ID     string `json:"id"`
	Host   string `json:"host"`
	Prompt string `json:"prompt"`
	// Resume continues an agent's earlier conversation (Claude Code): a session id from
	// an earlier result's payload, or "last".
	Resume string         `json:"resume,omitempty"`
	Meta   map[string]any `json:"meta,omitempty"`
	// By is who queued it (an API token's name, the CLI's user), recorded with the
	// session's start in the audit.
	By string `json:"by,omitempty"`
	// Attempt, on a task `agentmux resume` queued again, is its first attempt: after the
	// session's earlier ones, which it goes on from. Fresh starts it from no checkpoint.
	Attempt int  `json:"attempt,omitempty"`
	Fresh   bool `json:"fresh,omitempty"`
	// Unpaused marks the task queued in place of a paused session's waiting one: it runs
	// only once the session's PausedSession names it (its Copy).
	Unpaused bool `json:"unpaused,omitempty"`
	// Node, on a task `agentmux resume --node` queued, is the node it is for: other
	// nodes leave it in the queue for TaskAimedFor after it was queued, and any node of
	// its host takes it after (that node was full, or went).
	Node string `json:"node,omitempty"`
}

// TaskAimedFor is how long a task for a node (Task.Node) is that node's alone: long
// enough for a node with a free slot, short enough that one full, or gone, does not
// keep it. It counts from the task's time in the queue, whatever the task says.
const TaskAimedFor = time.Minute

// TaskSubject is host's queue as subjects name it: where a task was queued by a
// client that vouched for nobody (TaskSubjectBy), whose queuer is only a claim.
func TaskSubject(host string) string { return taskPrefix + host }

// TaskSubjectBy is where by queues a task for host. The bus lets an operator queue as
// itself only, the console and the local operator as the people they act for: a node
// records by as who asked for the session, and a task's own By, where it differs, as a
// claim. A by that cannot be a token of a subject queues on TaskSubject.
func TaskSubjectBy(host, by string) string {
	if !isToken(by) {
		return TaskSubject(host)
	}
	return taskPrefix + host + "." + by
}

// TaskSubjectsBy matches every subject by may queue a task on, for any host.
func TaskSubjectsBy(by string) string { return taskPrefix + "*." + by }

// TaskQueue is the subjects of host's queue, vouched for or not.
func TaskQueue(host string) []string { return []string{TaskSubject(host), taskPrefix + host + ".*"} }

// ParseTaskSubject splits a task's subject into its queue (a host or a pipeline) and
// who queued it, "" when nobody vouched for it.
func ParseTaskSubject(subject string) (queue, by string, ok bool) {
	rest, ok := strings.CutPrefix(subject, taskPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	queue, by, _ = strings.Cut(rest, ".")
	return queue, by, true
}

// TaskSubjects matches every task subject.
const TaskSubjects = taskPrefix + ">"

// maxTaskID bounds a task's id, which names its session in every subject of it.
const maxTaskID = 128

// CheckTaskID says what is wrong with id as a task's id, or nil. The id becomes the
// session's, one token of every subject of the session: a dot would split it, and a
// wildcard would match other sessions.
func CheckTaskID(id string) error {
	switch {
	case id == "":
		return errors.New("a task id is empty")
	case len(id) > maxTaskID:
		return fmt.Errorf("task id %.20q… is %d characters long; at most %d", id, len(id), maxTaskID)
	case !IsName(id):
		return fmt.Errorf("task id %q is one token of NATS subjects: use letters, digits, '_' and '-' (no '.', '*', '>' or spaces)", id)
	}
	return nil
}

// NewSessionID names a new session: unique across the fleet, and a single subject token.
func NewSessionID() string { return "s-" + nuid.Next() }
