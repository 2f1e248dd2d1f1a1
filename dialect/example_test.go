package dialect_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/dialect"
	"github.com/agentmux/agentmux/protocol"
)

// Claude Code asks to run a command; the dialect makes it a canonical approval, and the
// supervisor's "no" becomes Claude Code's deny.
func ExampleNew() {
	d, err := dialect.New(dialect.ClaudeCode, dialect.Options{Dir: "/work/repo"})
	if err != nil {
		panic(err)
	}
	line := `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build"}}}`
	msgs, _, err := d.Decode([]byte(line))
	if err != nil {
		panic(err)
	}
	req := msgs[0]
	fmt.Println(req.Type, req.ID, req.Description)

	reply := d.Answer(req, protocol.Response{ID: req.ID, Value: json.RawMessage(`"no"`), Outcome: protocol.OutcomeAnswered}, "not in this repository")
	var r struct {
		Response struct {
			Response struct {
				Behavior string `json:"behavior"`
				Message  string `json:"message"`
			} `json:"response"`
		} `json:"response"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		panic(err)
	}
	fmt.Println(r.Response.Response.Behavior + ": " + r.Response.Response.Message)
	// Output:
	// approval r1 Bash: rm -rf build
	// deny: not in this repository
}
