package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/workspace"
)

// StartSession asks the agent to run one session. The agent answers its parent with
// SessionEnded, and, when Reply is set, sends the same Result there.
type StartSession struct {
	Session string
	Task    string // the task id, when the session came from the work queue
	// Requeue says that its task may go back to the work queue to go on from its
	// checkpoint elsewhere or later: it may be handed over (Handover) or paused at a
	// usage limit. A local submission, or a pipeline stage, runs to its end here.
	Requeue bool
	Prompt  string
	// Resume continues an agent's earlier conversation: its session id, or "last"
	// (dialects that can: Claude Code's --resume and --continue).
	Resume string
	// By is who asked for the session, as the bus vouched for it (wire.TaskSubjectBy),
	// and ClaimedBy who its task said asked, where that differs: both for its start's
	// audit record.
	By, ClaimedBy string
	Attempt       int
	Reply         chan<- *Result // buffered by the sender; may be nil
	Notify        *actor.PID     // an actor the Result is sent to as well; may be nil
	Started       time.Time      // when the session was asked for, for its duration

	// A pipeline stage's session: Pipeline and Stage name it in events and the audit,
	// and its Routes are tried before the manifest's.
	Pipeline, Stage string
	Routes          config.Routes
	// Result types the session's result; nil: the host's result_schema, if any.
	Result *config.ResultSpec
	// Previous is what the attempts before this one did: sent with the prompt, and its
	// answers given again to the same requests.
	Previous *protocol.PreviousAttempt
	// Restored is the latest checkpoint of an earlier attempt, which this one goes on
	// from (nil: none, or it starts afresh).
	Restored *Restored
	// From is where the session's workspace starts, when not from the host's base on a
	// branch of its own: a pipeline's stages share the run's branch, each starting
	// where the one before ended.
	From workspace.From
	// Budget is the session's budget when not its host's: a pipeline's, raised Raises
	// times already in its run, its wall counted from BudgetFrom (the run's start), and
	// Spent, what the run's earlier stages spent, counted against it.
	Budget     *config.Budget
	Raises     int
	BudgetFrom time.Time
	Spent      *wire.Spend
	// Trace is the context of the span the session's is a child of (a pipeline stage's);
	// nil: a trace of its own.
	Trace context.Context
	// Retried is what the session's earlier attempts spent (set by the router on a
	// retry): it counts against its budget too.
	Retried *wire.Spend
}

// Interrupt asks the agent to end its current session early.
type Interrupt struct {
	Reason string
}

// RoutesChanged gives the agent the manifest's routes after a reload, or the shadows
// promoted fleet-wide after a promotion: its next request is routed by them, in the
// session running now too.
type RoutesChanged struct {
	Routes   config.Routes
	Promoted map[string]bool // read only: shared by every agent
}

// SendMessage delivers a mid-session message to agents that declared "message".
type SendMessage struct {
	Text string
}

// respond answers the sender of the current message, if there is one.
func respond(c actor.Context, d *wire.Delivery) {
	if c.Sender() != nil {
		c.Respond(d)
	}
}

// Shutdown asks the agent to answer its pending requests "cancelled", interrupt its
// session and stop its process. It reports AgentExited when the process is gone, and the
// parent stops it.
type Shutdown struct {
	Reason string
}

// Handover hands the running session to another node, as its node drains: it is
// checkpointed at its next safe point (at once, for an agent whose conversation the node
// keeps), then stopped, and it ends HandedOver, its task to run on from that checkpoint
// elsewhere. A session that cannot be checkpointed runs on. With Until, the session is
// paused by hand instead (agentmux pause), to go on then or when resumed; the answer,
// to a sender, is a *wire.Delivery.
type Handover struct {
	Reason string
	Until  time.Time
}

// SessionEnded tells the parent that a session ended. Reusable says whether the process
// can take another session.
type SessionEnded struct {
	PID      *actor.PID
	Result   *Result
	Reusable bool
	Start    *StartSession
}

// AgentExited tells the parent that the process is gone and the actor is stopping.
type AgentExited struct {
	PID    *actor.PID
	Reason string
}

// Result is how a session ended.
type Result struct {
	Session  string
	Host     string
	Task     string
	OK       bool
	Payload  json.RawMessage // the result message, with partial_output when partials arrived
	Text     string          // the result's text
	Data     json.RawMessage // a typed result: the JSON that fit the schema
	Error    string
	Duration time.Duration
	Attempt  int
	Requests []RequestRecord
	// Retryable is set when the session failed before the agent said anything of it on a
	// reused process: the router runs it again on a fresh process without counting a retry.
	Retryable bool
	// Workspace is what the session left in its workspace (Config.Workspace).
	Workspace *wire.Workspace
	// Usage is what the session's model calls cost, as the agent reported it (nil:
	// nothing); the router prices it with the manifest's [pricing].
	Usage *wire.Tally
	// BudgetExceeded is set when the session ended at its budget: its supervisors
	// answered "no" to going on, or nobody answered in time. Raises is how often its
	// budget was raised, StartSession.Raises included.
	BudgetExceeded bool
	Raises         int
	// HandedOver is set when the session was stopped to go on from its checkpoint on
	// another node (Handover): its task goes back to the queue. Paused, when set, is
	// why and until when the session is paused (at its provider's usage limit, or by
	// hand): its task goes back to the queue for then.
	HandedOver bool
	Paused     *wire.PausedSession
	// Spend is what all its attempts cost, priced by the router as it ends.
	Spend *wire.Spend
}

// RequestRecord is how one request of a session ended.
type RequestRecord struct {
	ID      string
	Type    protocol.Type
	Text    string // what routes matched: question, description or tool
	Value   json.RawMessage
	Outcome protocol.Outcome
	Decider string
	Latency time.Duration
}

// Restored is a session's checkpoint it is brought back from: the state its agent kept
// there, its transcript and its workspace's bundle (nil: none).
type Restored struct {
	// Why the session is brought back: "redelivered" (its node died, drained, or it
	// was paused) or "retried" (its attempt failed here).
	Why        string
	Checkpoint *wire.Checkpoint
	State      json.RawMessage
	Transcript []byte
	Workspace  []byte
}

// Internal messages: events from the agent's goroutines and timers.
type (
	processStarted struct {
		proc *process
		err  error
	}
	// linesRead are the lines of one read of stdout, in order: a busy agent's lines cost
	// one mailbox hop together, not one each. A stream line (progress, log, heartbeat)
	// is not decoded at all: its bytes are in buf.
	linesRead struct {
		lines []readLine
		buf   []byte
		at    time.Time // when they were read: a request's timeout runs from then
	}
	readLine struct {
		msg        *protocol.Message // nil for a stream line
		typ        protocol.Type     // a stream line's type
		start, end int               // a stream line's bytes in linesRead.buf
	}
	rawLine struct {
		line []byte    // a dialect process's line, for the dialect to decode
		at   time.Time // when it was read
	}
	frameError struct {
		reason string
		size   int
		head   []byte // the dropped line's first bytes
		err    error
	}
	stdoutClosed struct {
		err error
	}
	stderrLine struct {
		line    string
		dropped int // lines dropped by the rate limit since the last one sent
	}
	stderrClosed struct {
		dropped int // lines dropped since the last one sent
	}
	processExited struct {
		err error
	}
	writeFailed struct {
		timeout bool
		err     error
	}
	answerArrived struct {
		gen     uint64
		session string
		attempt int
		id      string
		reply   *wire.Reply
	}
	// shadowArrived is a route's shadow supervisor's answer to sh, asked in session
	// generation gen.
	shadowArrived struct {
		gen   uint64
		sh    *shadowing
		reply *wire.Reply
	}
	timerFired struct {
		kind timerKind
		gen  uint64
	}
)
