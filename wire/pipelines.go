package wire

import "encoding/json"

// PipelineBucket is the JetStream KV bucket of pipeline runs: each run's params and
// how far its stages got, so that the node that takes a run over resumes it at its
// stage and never runs a finished stage again.
const PipelineBucket = "agentmux_pipelines"

// Stage outcomes in a PipelineRun.
const (
	StagePending = "pending"
	StageRunning = "running" // started; after a node's death, started again
	StageOK      = "ok"
	StageError   = "error"
)

// PipelineRun is one run of a pipeline: its record in the bucket, the payload of the
// pipeline.ended event, and what `agentmux run` and `agentmux submit --follow` print.
type PipelineRun struct {
	ID       string            `json:"id"`
	Pipeline string            `json:"pipeline"`
	Params   map[string]string `json:"params"`
	Outcome  string            `json:"outcome,omitempty"` // ok or error once ended
	Error    string            `json:"error,omitempty"`
	Node     string            `json:"node"` // the node running it, or that ended it
	Stages   []*StageRun       `json:"stages"`
	Started  int64             `json:"started"` // unix milliseconds
	Ended    int64             `json:"ended,omitempty"`
	// Raises is how often people raised the pipeline's budget in this run: each stage
	// starts at the budget raised so often.
	Raises int `json:"raises,omitempty"`
}

// StageRun is how far one stage got.
type StageRun struct {
	Name     string          `json:"name"`
	Host     string          `json:"host"`
	Outcome  string          `json:"outcome"` // pending, running, ok or error
	Session  string          `json:"session,omitempty"`
	Attempts int             `json:"attempts,omitempty"` // starts, a resume after a node's death included
	Node     string          `json:"node,omitempty"`
	Text     string          `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Error    string          `json:"error,omitempty"`
	Duration float64         `json:"duration_ms,omitempty"`
	// Workspace is what an ended stage left in its workspace: the next stage on a host
	// with workspaces starts from its head, on the same branch.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Spend is what the stage's session cost: it counts against the pipeline's budget.
	Spend *Spend `json:"spend,omitempty"`
}

// PipelineTask is what `agentmux submit` queues on agentmux.task.<pipeline>.
type PipelineTask struct {
	ID       string            `json:"id"`
	Pipeline string            `json:"pipeline"`
	Params   map[string]string `json:"params"`
}

// StageEvent is the payload of the pipeline.stage.started and pipeline.stage.ended
// events, published on agentmux.evt.<pipeline>.<run>.<type>.
type StageEvent struct {
	Run      string          `json:"run"`
	Pipeline string          `json:"pipeline"`
	Stage    string          `json:"stage"`
	Host     string          `json:"host"`
	Session  string          `json:"session"`
	Attempt  int             `json:"attempt"` // the stage's start: 1, or more after a resume
	Node     string          `json:"node"`
	Outcome  string          `json:"outcome,omitempty"`
	Error    string          `json:"error,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Duration float64         `json:"duration_ms,omitempty"`
}

// Events of pipeline runs.
const (
	EventStageStarted  = "pipeline.stage.started"
	EventStageEnded    = "pipeline.stage.ended"
	EventPipelineEnded = "pipeline.ended"
)
