package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure the agent.
type Options struct {
	Script       *Script  // every session runs this; nil: the prompt's script or Generate
	Generate     Generate // used when neither Script nor the prompt gives a script
	Init         string   // answer to init: "ack" (default), "error" or "silent"
	Capabilities []string // declared in init_ack
	Stderr       io.Writer
	// Transcript, when set, receives every line in both directions, in the order the
	// agent saw them: "agent: " for lines written, "runtime: " for lines read.
	Transcript io.Writer
}

// ErrExit is returned by Run for an exit step; Code is the exit code.
type ErrExit struct{ Code int }

func (e *ErrExit) Error() string { return fmt.Sprintf("sim: exit %d", e.Code) }

// incoming is a line from the runtime: what the agent reads of it.
type incoming struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	ID      string          `json:"id"`
	Value   json.RawMessage `json:"value"`
	Outcome string          `json:"outcome"`
	Reason  string          `json:"reason"`
	// A typed result's new prompt, and a retry's account of earlier attempts.
	SchemaError     string          `json:"schema_error"`
	PreviousAttempt json.RawMessage `json:"previous_attempt"`
	raw             string
	notJSON         bool
	readErr         error
	finished        bool
}

type answer struct {
	Value   json.RawMessage `json:"value"`
	Outcome string          `json:"outcome"`
	Reason  string          `json:"reason,omitempty"`
}

type agent struct {
	opts     Options
	tmu      sync.Mutex // orders transcript lines written from the reader and the script
	out      io.Writer
	lines    chan *incoming
	answers  map[string]answer
	sent     []string // request ids sent this session, for await "*"
	unnamed  int      // requests sent without an id (the runtime assigns one)
	messages []string
	sessions int
	pauses   int // pause lines read this session, and resume lines
	resumes  int
	script   *Script         // the session's script, for its retry steps
	fixes    []string        // schema errors received this session
	previous json.RawMessage // the previous_attempt of this session's prompt
	werr     error           // the first failed write
	done     chan struct{}   // closed when Run returns, so the reader never blocks on lines
}

// Run serves sessions read from in until in closes, writing to out.
func Run(in io.Reader, out io.Writer, opts Options) error {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	a := &agent{opts: opts, out: out, lines: make(chan *incoming, 64), done: make(chan struct{})}
	defer close(a.done)
	go a.read(in)
	for {
		if a.werr != nil {
			return a.werr
		}
		m := <-a.lines
		if m.finished {
			return m.readErr
		}
		switch {
		case m.Type == "init":
			switch opts.Init {
			case "error":
				a.write(map[string]any{"type": "error", "message": "sim: refusing to initialize"})
			case "silent":
			default:
				a.write(map[string]any{"type": "init_ack", "version": "sim/1", "capabilities": opts.Capabilities})
			}
		case m.Type == "prompt" && m.SchemaError != "" && a.script != nil && len(a.script.Retry) > 0:
			if err := a.retry(m.SchemaError); err != nil {
				return err
			}
		case m.Type == "prompt" || m.notJSON:
			text := m.Text
			if m.notJSON {
				text = m.raw
			}
			a.previous = m.PreviousAttempt
			if err := a.session(text); err != nil {
				return err
			}
		}
	}
}

func (a *agent) read(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line != "" {
			a.transcribe("runtime: ", line)
			m := &incoming{raw: line}
			if json.Unmarshal([]byte(line), m) != nil || m.Type == "" {
				m.notJSON = true
			}
			select {
			case a.lines <- m:
			case <-a.done:
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			select {
			case a.lines <- &incoming{finished: true, readErr: err}:
			case <-a.done:
			}
			return
		}
	}
}

func (a *agent) write(v any) {
	b, _ := json.Marshal(v)
	a.writeLine(b)
}

// writeLine writes one line; after a failed write (stdout is gone: nobody listens) it
// writes nothing more and the script ends with the error.
func (a *agent) writeLine(b []byte) {
	if a.werr != nil {
		return
	}
	a.transcribe("agent: ", string(b))
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	if _, err := a.out.Write(buf); err != nil {
		a.werr = fmt.Errorf("sim: stdout: %w", err)
	}
}

func (a *agent) transcribe(dir, line string) {
	if a.opts.Transcript == nil {
		return
	}
	if len(line) > 4096 {
		line = fmt.Sprintf("%s... (%d bytes)", line[:40], len(line))
	}
	a.tmu.Lock()
	defer a.tmu.Unlock()
	fmt.Fprintf(a.opts.Transcript, "%s%s\n", dir, line)
}

// errInterrupted ends a session early on an interrupt line.
var errInterrupted = errors.New("interrupted")

func (a *agent) session(prompt string) error {
	a.sessions++
	a.answers = map[string]answer{}
	a.sent = nil
	a.unnamed = 0
	a.messages = nil
	a.fixes = nil
	a.pauses, a.resumes = 0, 0
	script := a.opts.Script
	if plan, ok := parseLoad(prompt); ok {
		return a.load(plan)
	}
	if script == nil && strings.HasPrefix(strings.TrimSpace(prompt), "{") {
		s, err := ParseScript([]byte(prompt))
		if err != nil {
			a.write(map[string]any{"type": "error", "message": err.Error()})
			return nil
		}
		script = s
	}
	if script == nil {
		script = a.opts.Generate.Script()
	}
	a.script = script
	return a.run(script.Steps)
}

// retry runs the script's steps for a new prompt after a result that did not fit its
// schema: the n-th such prompt runs Retry[n-1], the last one repeating.
func (a *agent) retry(schemaError string) error {
	a.fixes = append(a.fixes, schemaError)
	i := min(len(a.fixes), len(a.script.Retry)) - 1
	return a.run(a.script.Retry[i])
}

func (a *agent) run(steps []Step) error {
	for _, st := range steps {
		err := a.step(st)
		if err == nil {
			err = a.werr
		}
		if errors.Is(err, errInterrupted) {
			a.write(map[string]any{"type": "result", "text": "interrupted", "interrupted": true, "answers": a.answers, "messages": a.messages})
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *agent) step(st Step) error {
	switch {
	case st.Send != nil:
		var head struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(st.Send, &head) == nil {
			switch {
			case head.ID != "":
				a.sent = append(a.sent, head.ID)
			case head.Type == "question" || head.Type == "approval" || head.Type == "tool_call":
				a.unnamed++
			}
		}
		a.writeLine(compact(st.Send))
	case st.Raw != nil:
		a.writeLine([]byte(*st.Raw))
	case st.RawBytes > 0:
		a.writeLine(bytes.Repeat([]byte("x"), st.RawBytes))
	case st.Await != "":
		return a.await(st.Await)
	case st.Sleep > 0:
		return a.pump(time.After(time.Duration(st.Sleep)), nil)
	case st.AwaitResume:
		return a.pump(nil, func() bool { return a.pauses > 0 && a.resumes >= a.pauses })
	case st.Result != nil:
		res := map[string]any{"type": "result", "text": *st.Result, "answers": a.answers, "session_number": a.sessions}
		if a.pauses > 0 {
			res["pauses"], res["resumes"] = a.pauses, a.resumes
		}
		if len(a.messages) > 0 {
			res["messages"] = a.messages
		}
		if len(a.fixes) > 0 {
			res["schema_errors"] = a.fixes
		}
		if len(a.previous) > 0 {
			res["previous_attempt"] = a.previous
		}
		a.write(res)
	case st.Error != nil:
		a.write(map[string]any{"type": "error", "message": *st.Error})
	case st.Exit != nil:
		return &ErrExit{Code: *st.Exit}
	case st.ExitFirst != nil:
		if len(a.previous) == 0 {
			return &ErrExit{Code: *st.ExitFirst}
		}
	case st.Hang:
		select {}
	case st.IgnoreTerm:
		signal.Ignore(syscall.SIGTERM)
	case st.Grandchild:
		cmd := exec.Command("sleep", "3600")
		cmd.Stdout = os.Stdout // holds our stdout open after we are gone
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("sim: grandchild: %w", err)
		}
	case st.Stderr != "":
		fmt.Fprintln(a.opts.Stderr, st.Stderr)
	}
	return nil
}

// await waits for the answer to id, or to every request sent so far when id is "*".
func (a *agent) await(id string) error {
	done := func() bool {
		_, ok := a.answers[id]
		return ok
	}
	if id == "*" {
		done = func() bool {
			for _, id := range a.sent {
				if _, ok := a.answers[id]; !ok {
					return false
				}
			}
			return len(a.answers) >= len(a.sent)+a.unnamed
		}
	}
	return a.pump(nil, done)
}

// pump handles incoming lines until timeout fires or done reports true.
func (a *agent) pump(timeout <-chan time.Time, done func() bool) error {
	for done == nil || !done() {
		select {
		case <-timeout:
			return nil
		case m := <-a.lines:
			if m.finished {
				return m.readErr
			}
			switch m.Type {
			case "response":
				a.answers[m.ID] = answer{Value: m.Value, Outcome: m.Outcome, Reason: m.Reason}
			case "interrupt":
				return errInterrupted
			case "message":
				a.messages = append(a.messages, m.Text)
			case "pause":
				a.pauses++
			case "resume":
				a.resumes++
			}
		}
	}
	return nil
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
