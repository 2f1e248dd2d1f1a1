package protocol_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// The read loop of the package documentation, over an agent's stdout: a line over the
// limit is dropped and the stream goes on; a plain-text line is a result.
func ExampleReader() {
	stdout := strings.NewReader(`{"type":"progress","message":"reading the code"}` + "\n" +
		`{"type":"question","id":"q1","question":"Which database?","options":["postgres","sqlite"]}` + "\n" +
		strings.Repeat("x", 100) + "\n" +
		"done\n")
	r := protocol.NewReader(stdout, 96)
	for {
		line, err := r.Next()
		var tooLong *protocol.LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			fmt.Println("dropped a line of", tooLong.Size, "bytes")
			continue
		case err != nil:
			fmt.Println("end:", err)
			return
		}
		msg, err := protocol.Decode(line, protocol.PlainTextResult)
		if err != nil {
			fmt.Println("invalid:", err)
			continue
		}
		fmt.Printf("%s %q\n", msg.Type, msg.RequestText()+msg.Text)
	}
	// Output:
	// progress ""
	// question "Which database?"
	// dropped a line of 100 bytes
	// result "done"
	// end: EOF
}

// An answer to a request, as the runtime writes it to the agent's stdin: one line.
func ExampleAppendResponse() {
	line := protocol.AppendResponse(nil, protocol.Response{InReplyTo: protocol.TypeQuestion, ID: "q1",
		Value: []byte(` "postgres" `), Outcome: protocol.OutcomeAnswered})
	fmt.Print(string(line))
	// Output:
	// {"type":"response","in_reply_to":"question","id":"q1","answer_to":"q1","value":"postgres","outcome":"answered"}
}
