package wire

import (
	"strconv"

	"github.com/agentmux/agentmux/protocol"
)

// The checkpoints of sessions: what a node records at a session's safe points to bring
// it back on another node. The parts (an agent's state, its transcript, its workspace)
// are one entry of CheckpointDataBucket when they fit in one message, else one object
// of CheckpointBucket; nodes alone write and read both (they may hold secrets:
// operators export them through a node, on CheckpointExportSubject).
// CheckpointIndexBucket lists them, for readers too.
const (
	CheckpointBucket      = "agentmux_checkpoints"
	CheckpointDataBucket  = "agentmux_checkpoint_data"
	CheckpointIndexBucket = "agentmux_checkpoint_index"
	// CheckpointExportSubject is where a node (queue group agentmux-checkpoints) sends an
	// operator a checkpoint's part: CheckpointExport, answered by CheckpointChunk
	// messages on the reply subject, the last one empty with its digest.
	CheckpointExportSubject = "agentmux.checkpoint.export"
)

// Checkpoint is one checkpoint of a session, as the index lists it under
// CheckpointKey(session, its slot).
type Checkpoint struct {
	Session string `json:"session"`
	Seq     int    `json:"seq"` // its session's first is 1
	// Entry is the key of its parts in CheckpointDataBucket, or Object their object's
	// name in CheckpointBucket (both CheckpointKey and CheckpointObject of its slot).
	Entry   string `json:"entry,omitempty"`
	Object  string `json:"object,omitempty"`
	Host    string `json:"host"`
	Node    string `json:"node"`
	Attempt int    `json:"attempt"`
	Time    int64  `json:"time"` // unix milliseconds
	// Why it was taken: "agent" (the agent's own safe point: a native agent's checkpoint
	// line, a tool's result in), "request" (it asked), "answer" (it was answered) or
	// "interval" (checkpoint_interval).
	Why   string           `json:"why"`
	Parts []CheckpointPart `json:"parts"`
	Bytes int64            `json:"bytes"` // its parts together
	// Workspace is what its workspace part (a git bundle) holds, on a host with
	// workspaces.
	Workspace *CheckpointWorkspace `json:"workspace,omitempty"`
}

// CheckpointWorkspace is a checkpoint's workspace: the checkpoint commit (the checkout
// as it was, on top of Head, the session's own commits) and the base it needs.
type CheckpointWorkspace struct {
	Base   string `json:"base"`
	Head   string `json:"head"`
	Commit string `json:"commit"`
}

// OutcomeHandedOver is the outcome of a session's attempt stopped at its checkpoint as
// its node drained: its task goes on from that checkpoint on another node.
const OutcomeHandedOver = "handed_over"

// OutcomePaused is the outcome of a session's attempt stopped at its checkpoint at its
// provider's usage limit: its task goes on from that checkpoint once the limit resets.
const OutcomePaused = "paused"

// CheckpointPart is one object of a checkpoint: its name ("state"), size and SHA-256.
type CheckpointPart struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// CheckpointSlot is where checkpoint seq of a session that keeps its latest keep goes:
// seq mod keep. A checkpoint takes the place of the one keep before it, which goes with
// the write: no checkpoint costs a removal.
func CheckpointSlot(seq, keep int) int { return seq % max(keep, 1) }

// CheckpointKey is the key in the index of a session's checkpoint in slot
// (CheckpointSlot): <session>.<slot>.
func CheckpointKey(session string, slot int) string {
	return session + "." + strconv.Itoa(slot)
}

// CheckpointObject is the name in CheckpointBucket of a session's checkpoint in slot:
// one object, its parts one after another in the order its index entry lists them. A
// checkpoint that fits in one message is an entry of CheckpointDataBucket instead, under
// its CheckpointKey, laid out alike.
func CheckpointObject(session string, slot int) string {
	return session + "/" + strconv.Itoa(slot)
}

// CheckpointExport asks a node for one part of a session's checkpoint: seq 0 is its
// latest.
type CheckpointExport struct {
	Session string `json:"session"`
	Seq     int    `json:"seq,omitempty"`
	Part    string `json:"part"`
}

// CheckpointChunk is one message of an export: the next bytes of the part, in order
// (N from 0); the last has none, Done, the part's SHA-256 and the checkpoint it is of,
// or Error.
type CheckpointChunk struct {
	N          int         `json:"n"`
	Data       []byte      `json:"data,omitempty"`
	Done       bool        `json:"done,omitempty"`
	SHA256     string      `json:"sha256,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// The events of a session's checkpoints.
const (
	EventCheckpointSaved  = "checkpoint.saved"  // CheckpointSaved
	EventCheckpointFailed = "checkpoint.failed" // CheckpointSaved, with Error
)

// CheckpointSaved is the payload of checkpoint.saved and checkpoint.failed: which
// checkpoint, how large, or why it was not kept (the one before stands). It holds none
// of the checkpoint's parts: readers of the events may not read them.
type CheckpointSaved struct {
	Seq   int    `json:"seq"`
	Why   string `json:"why"`
	Bytes int64  `json:"bytes"`
	Error string `json:"error,omitempty"`
}

// SessionPlace is a checkpoint's "place" part: where the session was, for its node to
// start it again there.
type SessionPlace struct {
	Task     string `json:"task,omitempty"`
	Prompt   string `json:"prompt"`
	By       string `json:"by,omitempty"`
	Attempt  int    `json:"attempt"`
	Pipeline string `json:"pipeline,omitempty"`
	Stage    string `json:"stage,omitempty"`
	// Answers are the requests its attempts answered so far, to be given again.
	Answers []protocol.PriorAnswer `json:"answers,omitempty"`
	// Spend is what it spent so far.
	Spend *Spend `json:"spend,omitempty"`
}
