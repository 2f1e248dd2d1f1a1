package protocol

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// TypeCheckpoint is a native agent's checkpoint: {"type":"checkpoint","state":{…}}, what
// it needs to go on where it stopped if its session is brought back on another node.
// The node keeps the latest of each session; the state is handed back when it resumes.
const TypeCheckpoint Type = "checkpoint"

// checkpointState is the state of a checkpoint line, as its decoding read it: any JSON
// value but null.
func checkpointState(state json.RawMessage) (json.RawMessage, error) {
	if len(state) == 0 || string(state) == "null" {
		return nil, errors.New(`a checkpoint needs a "state": what the agent needs to go on where it stopped`)
	}
	return state, nil
}

// decodeCheckpointFast decodes a checkpoint line of a type and a state alone in one pass
// that checks the line and walks its top-level keys: a state may weigh megabytes, which
// the full decoder would read three times. It reports false for any other line (another
// key, a duplicate, an escape, a null state), which the full decoder then judges; the two
// agree on every line it accepts (FuzzDecodeFast checks).
func decodeCheckpointFast(obj []byte) (*Message, bool) {
	var typ, state []byte
	walked := rawjson.Fields(obj, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			if typ != nil || !oneOf(value, TypeCheckpoint) {
				return false
			}
			typ = value
		case "state":
			if state != nil {
				return false
			}
			state = value
		default:
			return false
		}
		return true
	})
	if !walked || state == nil || string(state) == "null" {
		return nil, false
	}
	if name, _, ok := rawjson.PlainString(typ, 0); !ok || len(typ) == 0 || Type(name) != TypeCheckpoint {
		return nil, false
	}
	// The state is a part of the line's copy (Fields gives values as parts of obj).
	raw, at := bytes.Clone(obj), cap(obj)-cap(state)
	return &Message{Type: TypeCheckpoint, Name: string(TypeCheckpoint), Raw: raw, State: raw[at : at+len(state) : at+len(state)]}, true
}
