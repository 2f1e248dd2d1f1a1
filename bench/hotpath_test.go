package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
)

var (
	progressLine = []byte(`{"type":"progress","message":"step 3 of 10: running the unit tests in ./pkg/...","percent":30}`)
	questionLine = []byte(`{"type":"question","id":"q7","kind":"select","question":"Which test suite should run before the merge?","options":["unit","e2e","all"],"timeout_ms":5000}`)
)

// BenchmarkFrame reads many lines through the framer, as an agent's stdout is read.
func BenchmarkFrame(b *testing.B) {
	var buf bytes.Buffer
	for range 1000 {
		buf.Write(progressLine)
		buf.WriteByte('\n')
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := protocol.NewReader(bytes.NewReader(data), 1<<20)
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeProgress(b *testing.B) { benchDecode(b, progressLine) }
func BenchmarkDecodeQuestion(b *testing.B) { benchDecode(b, questionLine) }

func benchDecode(b *testing.B, line []byte) {
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.Decode(line, protocol.PlainTextResult); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoute finds the supervisor of a request among a few routes.
func BenchmarkRoute(b *testing.B) {
	m, err := config.Parse("m.toml", []byte(`[supervisors.s]
strategy = "static"
answers = { question = "x" }
[[routes]]
match = "(?i)token|auth|secret|rm -rf|drop table"
supervisor = "s"
[[routes]]
type = "question"
match = "(?i)test"
supervisor = "s"
[[routes]]
supervisor = "s"
`))
	if err != nil {
		b.Fatal(err)
	}
	msg, err := protocol.Decode(questionLine, protocol.PlainTextResult)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if m.Routes.Match("w", string(msg.Type), msg.RequestText(), false) == nil {
			b.Fatal("no route")
		}
	}
}

// BenchmarkEncodeResponse writes an answer line into a reused buffer.
func BenchmarkEncodeResponse(b *testing.B) {
	r := protocol.Response{InReplyTo: protocol.TypeQuestion, ID: "q7", Value: json.RawMessage(`"e2e"`), Outcome: protocol.OutcomeAnswered}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = protocol.AppendResponse(buf[:0], r)
	}
}

// BenchmarkValidateSelect checks an answer against a select question's options.
func BenchmarkValidateSelect(b *testing.B) {
	msg, err := protocol.Decode(questionLine, protocol.PlainTextResult)
	if err != nil {
		b.Fatal(err)
	}
	v := json.RawMessage(`"e2e"`)
	b.ReportAllocs()
	for b.Loop() {
		if err := protocol.ValidateAnswer(msg, v); err != nil {
			b.Fatal(err)
		}
	}
}
