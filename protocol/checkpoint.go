package protocol

import (
	"encoding/json"
	"errors"
)

// TypeCheckpoint is a native agent's checkpoint: {"type":"checkpoint","state":{…}}, what
// it needs to go on where it stopped if its session is brought back on another node.
// The node keeps the latest of each session; the state is handed back when it resumes.
const TypeCheckpoint Type = "checkpoint"

// checkpointState is the state of a checkpoint line: any JSON value but null.
func checkpointState(raw []byte) (json.RawMessage, error) {
	var w struct {
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if len(w.State) == 0 || string(w.State) == "null" {
		return nil, errors.New(`a checkpoint needs a "state": what the agent needs to go on where it stopped`)
	}
	return w.State, nil
}
