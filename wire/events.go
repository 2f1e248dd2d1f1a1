package wire

// EventMark is the reply subject of every event and announcement a node publishes;
// nothing answers there. The server never sends a message with such a reply, so the
// answers a reader of the bus can have it send to an event subject (bus.CheckEvent) do
// not pass for events.
const EventMark = "agentmux.event"

// Events published on agentmux.evt.<host>.<session>.<type> besides the agent's own
// types (progress, question, result, …) and the pipelines' (pipelines.go).
const (
	EventSessionStarted  = "session.started"
	EventSessionEnded    = "session.ended"
	EventRequestAnswered = "request.answered"
	// EventSessionPaused: a session reached its budget; a budget request asks its
	// supervisors whether it goes on (SessionPaused).
	EventSessionPaused = "session.paused"
	// EventSessionResumed: its budget was raised and the session goes on (SessionPaused).
	EventSessionResumed = "session.resumed"
	EventFrameTooLong   = "frame_too_long"
	EventFrameInvalid   = "frame_invalid"
	EventStderr         = "agent.stderr"
	// EventResultInvalid: a result did not fit the session's schema; a new prompt says why.
	EventResultInvalid = "result.invalid"
	// EventWorkspaceTouched: a session in a workspace is about to change files, or has
	// (WorkspaceTouch); every node's conflict radar reads them.
	EventWorkspaceTouched = "workspace.touched"
	// EventWorkspaceConflict: two live sessions on one repository touch the same files
	// (WorkspaceConflict).
	EventWorkspaceConflict = "workspace.conflict"
)
