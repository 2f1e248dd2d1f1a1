package wire

// PausedBucket is the KV bucket of the fleet's paused sessions: a session's task waits
// in the work queue until its pause is over (or `agentmux resume` brings it forward),
// and its entry says why and until when. Keyed by session id; a node writes an entry as
// the session pauses and removes it as the session goes on.
const PausedBucket = "agentmux_paused"

// Why a session is paused (the reason label of agentmux_sessions_paused).
const (
	PausedAtLimit = "limit" // its provider's usage limit, until its reset
	PausedByHand  = "hand"  // agentmux pause, until agentmux resume or its until
)

// PausedSession is one entry of PausedBucket.
type PausedSession struct {
	Session    string `json:"session"`
	Host       string `json:"host"`
	Task       string `json:"task,omitempty"`
	Reason     string `json:"reason"` // PausedAtLimit or PausedByHand
	Why        string `json:"why"`    // in words
	Until      int64  `json:"until"`  // unix ms: its task is delivered again then
	Since      int64  `json:"since"`  // unix ms
	Checkpoint int    `json:"checkpoint"`
	Node       string `json:"node"`    // where it paused
	Attempt    int    `json:"attempt"` // the attempt that paused
	// Seq and Subject are the task's message in TaskStream, waiting until Until.
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	// Copy is the Nats-Msg-Id of the task `agentmux resume` queued in its place: the
	// waiting one is then superseded, and goes when it is delivered.
	Copy string `json:"copy,omitempty"`
	// Running is the node that runs the copy, once one does: the session is paused no
	// more, and its entry goes when it ends.
	Running string `json:"running,omitempty"`
}

// ResumeRequest asks a node (agentmux.ctl.<node>.resume) to have a paused or failed
// session go on now: from its latest checkpoint, or afresh (Fresh); on the node asked
// when Node names it (Task.Node). By is who asks, as the requester claims it.
type ResumeRequest struct {
	Session string `json:"session"`
	Fresh   bool   `json:"fresh,omitempty"`
	Node    string `json:"node,omitempty"`
	By      string `json:"by,omitempty"`
}
