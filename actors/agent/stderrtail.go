package agent

import (
	"regexp"
	"strings"
)

// A crash's error quotes the end of the agent's stderr: at most this many lines and
// bytes, each line cut to lineBytes.
const (
	stderrTailLines = 20
	stderrTailBytes = 4096
	stderrLineBytes = 512
)

// stderrCause matches a line that reads as the error itself: Node's "Error: Cannot
// find module …", Python's "ModuleNotFoundError: …" and "Traceback", Go's "panic:",
// and "fatal:"/"error:" lines.
var stderrCause = regexp.MustCompile(`^\s*(Uncaught )?([A-Za-z_][\w.]*)?(Error|Exception)\b:|Cannot find module|^\s*(panic|fatal|error|FATAL|ERROR)\b:?`)

// stderrTail keeps the last lines of an agent's stderr, and the last line that reads
// as the error, which may have scrolled out of them (a stack trace follows it).
type stderrTail struct {
	lines []string
	bytes int
	cause string
}

func (t *stderrTail) add(line string) {
	line = cutLine(line, stderrLineBytes)
	if stderrCause.MatchString(line) {
		t.cause = strings.TrimSpace(line)
	}
	t.lines = append(t.lines, line)
	t.bytes += len(line)
	for len(t.lines) > stderrTailLines || t.bytes > stderrTailBytes {
		t.bytes -= len(t.lines[0])
		t.lines = t.lines[1:]
	}
}

// String is what a crash's error says of stderr: the error's line, when one reads as
// it, then the last lines; "" when the agent wrote none.
func (t *stderrTail) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	var b strings.Builder
	if t.cause != "" && !(len(t.lines) == 1 && strings.TrimSpace(t.lines[0]) == t.cause) {
		b.WriteString(": ")
		b.WriteString(t.cause)
	}
	b.WriteString("; last stderr: ")
	b.WriteString(strings.Join(t.lines, " | "))
	return b.String()
}
