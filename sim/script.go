package sim

import (
	"encoding/json"
	"fmt"
	"time"
)

// Script is what the agent does in one session.
type Script struct {
	Steps []Step `json:"steps"`
	// Retry are the steps for each new prompt after a result that did not fit its
	// schema, in order; the last repeats.
	Retry [][]Step `json:"retry,omitempty"`
}

// Step is one action. Exactly one field is set.
type Step struct {
	Send     json.RawMessage `json:"send,omitempty"`      // write this JSON object as a line
	Raw      *string         `json:"raw,omitempty"`       // write this raw line (garbage, plain text)
	RawBytes int             `json:"raw_bytes,omitempty"` // write a line of this many 'x' bytes
	Await    string          `json:"await,omitempty"`     // wait for the answer to this id; "*" for all outstanding
	Sleep    Duration        `json:"sleep,omitempty"`
	// AwaitResume waits until the runtime paused the session (at its budget) and
	// resumed it, as often as it paused it.
	AwaitResume bool    `json:"await_resume,omitempty"`
	Result      *string `json:"result,omitempty"` // send a result with this text and the answers received
	Error       *string `json:"error,omitempty"`  // send an error with this message
	Exit        *int    `json:"exit,omitempty"`   // exit the process with this code
	// ExitFirst exits with this code unless the prompt told of an earlier attempt.
	ExitFirst  *int   `json:"exit_first_attempt,omitempty"`
	Hang       bool   `json:"hang,omitempty"` // stop reading and writing for good
	IgnoreTerm bool   `json:"ignore_term,omitempty"`
	Grandchild bool   `json:"grandchild,omitempty"` // start a child that holds stdout open
	Stderr     string `json:"stderr,omitempty"`     // write a line to stderr
}

// Duration is a JSON duration string ("10ms").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("sim: a duration is a string such as \"10ms\": %w", err)
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	*d = Duration(p)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ParseScript reads a JSON script.
func ParseScript(b []byte) (*Script, error) {
	var s Script
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sim: script: %w", err)
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("sim: script has no steps")
	}
	return &s, nil
}

// Generate says what a generated script does.
type Generate struct {
	Progress  int
	Partials  int
	Questions int
	Approvals int
	ToolCalls int
	Unknown   int
	Think     time.Duration // pause between messages
	Mode      string        // "", crash, hang, garbage
}

// Script builds the script Generate describes: messages in order, each request awaited,
// then a result (or the mode's failure).
func (g Generate) Script() *Script {
	var steps []Step
	send := func(v any) {
		b, _ := json.Marshal(v)
		steps = append(steps, Step{Send: b})
		if g.Think > 0 {
			steps = append(steps, Step{Sleep: Duration(g.Think)})
		}
	}
	for i := range g.Progress {
		send(map[string]any{"type": "progress", "message": fmt.Sprintf("step %d", i+1), "percent": 100 * (i + 1) / max(g.Progress, 1)})
		if g.Mode == "hang" && i == 0 {
			steps = append(steps, Step{Hang: true})
		}
		if g.Mode == "garbage" && i == 0 {
			raw := "{not json"
			steps = append(steps, Step{Raw: &raw})
		}
	}
	for i := range g.Partials {
		send(map[string]any{"type": "partial", "text": fmt.Sprintf("part %d. ", i+1)})
	}
	kinds := []string{"prompt", "confirm", "select"}
	for i := range g.Questions {
		id := fmt.Sprintf("q%d", i+1)
		q := map[string]any{"type": "question", "id": id, "question": fmt.Sprintf("question %d?", i+1), "kind": kinds[i%3]}
		if kinds[i%3] == "select" {
			q["options"] = []string{"a", "b", "c"}
		}
		send(q)
		if g.Mode == "crash" && i == 0 {
			code := 3
			steps = append(steps, Step{Exit: &code})
		}
		steps = append(steps, Step{Await: id})
	}
	for i := range g.Approvals {
		id := fmt.Sprintf("a%d", i+1)
		send(map[string]any{"type": "approval", "id": id, "description": fmt.Sprintf("run step %d", i+1)})
		steps = append(steps, Step{Await: id})
	}
	for i := range g.ToolCalls {
		id := fmt.Sprintf("t%d", i+1)
		send(map[string]any{"type": "tool_call", "id": id, "tool": "lookup", "args": map[string]any{"n": i}})
		steps = append(steps, Step{Await: id})
	}
	for range g.Unknown {
		send(map[string]any{"type": "telemetry", "tokens": 42})
	}
	text := "done"
	steps = append(steps, Step{Result: &text})
	return &Script{Steps: steps}
}
