package agent

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/gateway"
	"github.com/agentmux/agentmux/internal/routines"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/metrics"
	"github.com/agentmux/agentmux/wire"
)

// Env is what every agent of a node shares. The node makes it once and passes it by
// pointer through its router and pipeline runs to each agent; no one changes it after.
// Zero fields take defaults (NewEnv).
type Env struct {
	Node    string
	Conn    *nats.Conn
	Asker   *ask.Asker // sends requests to supervisors; one per node
	Metrics *metrics.Set
	Log     *slog.Logger
	// Audit records an audit entry under a deduplication id; it must not block, and
	// may be called from any goroutine.
	Audit func(id string, rec *wire.AuditRecord)
	// Late records the shadow decisions that come after their session ended; nil: they
	// are recorded without one as it ends.
	Late *Late
	// Grants are the answers people gave for a session or a host, fleet-wide: a
	// request one covers is answered at once. Nil: none but the session's own.
	Grants Grants
	// Procs records an agent's process group in the node's store while it runs, for
	// the next node on that store to sweep if it outlives this one (nil: not recorded).
	Procs *shim.Registry
	// Tracer makes a span of each session and of each request it routes, whose context
	// goes with the ask (nil: none).
	Tracer trace.Tracer
	// Dispatcher runs the actors' mailboxes: the node's dispatch.Pool, whose workers
	// keep the stack a Receive grows. Nil: protoactor's default, a goroutine per run.
	Dispatcher actor.Dispatcher
	// Routines owns the goroutines the node's actors start off themselves (a process's
	// start, a workspace's opening and closing, store I/O, pullers); the node stops it
	// once its actors have stopped, and waits for them.
	Routines *routines.Group
	// Gateway is the node's model gateway, which hosts with a model reach their
	// connection through (nil: the node runs none).
	Gateway *gateway.Gateway
	// Record is what the audit keeps of each model call through the gateway
	// ([gateway] record): "" or config.RecordNone nothing, config.RecordMetadata a
	// model.call record, config.RecordFull its bodies too, which go to Exchange.
	Record string
	// Exchange records a model call's request and answer; like Audit, it must not
	// block. Nil: they are not kept.
	Exchange func(x *wire.ModelExchange)
	// Checkpoints keeps the sessions' checkpoints (nil: the node keeps none), each up to
	// MaxCheckpointBytes.
	Checkpoints        Checkpointer
	MaxCheckpointBytes int64
	// WriteTimeout bounds each write to an agent's stdin.
	WriteTimeout time.Duration
	// DrainDelay is how long stdout may stay open after the process exited (a grandchild
	// holding it) before it is closed and the group killed.
	DrainDelay time.Duration
}

// NewEnv is e with its zero fields defaulted: DefaultWriteTimeout, DefaultDrainDelay,
// an audit that records nothing and a Routines group of its own.
func NewEnv(e Env) *Env {
	if e.WriteTimeout == 0 {
		e.WriteTimeout = DefaultWriteTimeout
	}
	if e.DrainDelay == 0 {
		e.DrainDelay = DefaultDrainDelay
	}
	if e.Audit == nil || e.Routines == nil {
		e.Audit = func(string, *wire.AuditRecord) {}
	}
	if e.Routines == nil {
		e.Routines = routines.New()
	}
	return &e
}

// Defaulted is e, or a copy of it with its zero fields defaulted (NewEnv) when it has
// any; nil is an Env of defaults.
func (e *Env) Defaulted() *Env {
	if e == nil {
		return NewEnv(Env{})
	}
	if e.WriteTimeout == 0 || e.DrainDelay == 0 || e.Audit == nil || e.Routines == nil {
		return NewEnv(*e)
	}
	return e
}
