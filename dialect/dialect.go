package dialect

import (
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/protocol"
)

// Native is the dialect name of the canonical protocol itself.
const Native = "ndjson"

// Dialect is one vendor's protocol for one process.
type Dialect interface {
	// Args come before the host's args when the process starts (a subcommand, flags).
	Args() []string
	// Capabilities are what the runtime may send in-band: "interrupt", "message".
	Capabilities() []string
	// Reusable reports whether one process serves several sessions in turn. A process
	// that is not starts with its session, and SessionArgs.
	Reusable() bool
	// SessionArgs are the args of a session's own process: resuming an earlier
	// conversation (an id, or "last"), for dialects that can; nil otherwise.
	SessionArgs(resume string) []string
	// Prompt is what starts a session.
	Prompt(text, session string) []byte
	// Continue is another turn of the session's conversation, after its result: the
	// agent keeps what it knows (a typed result's new prompt).
	Continue(text string) []byte
	// Decode turns one vendor line into zero or more canonical messages, and what the
	// protocol itself answers at once (a handshake's next step, a refusal), or nil.
	Decode(line []byte) ([]*protocol.Message, []byte, error)
	// Answer turns a canonical answer to req into the vendor's reply, or nil when
	// nothing is to be written (yet, or ever: a request the agent withdrew).
	Answer(req *protocol.Message, r protocol.Response, reason string) []byte
	// Interrupt asks the agent to end its turn.
	Interrupt(reason string) []byte
	// Message is a mid-session message from an operator or supervisor.
	Message(text string) []byte
}

// New returns the dialect of a process working in dir (absolute); the native protocol
// has none (nil).
func New(name, dir string) (Dialect, error) {
	switch name {
	case "", Native:
		return nil, nil
	case ClaudeCode:
		return newClaude(), nil
	case ACP:
		return newACP(dir), nil
	case Codex:
		return newCodex(dir), nil
	}
	return nil, fmt.Errorf("dialect: %q is not available; use %q, %q, %q or %q", name, Native, ClaudeCode, ACP, Codex)
}

// canonical builds a canonical message from fields, with the vendor's line under "raw".
func canonical(fields map[string]any, raw []byte) (*protocol.Message, error) {
	if raw != nil {
		fields["raw"] = json.RawMessage(raw)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return protocol.Decode(b, protocol.PlainTextLog)
}

func line(v any) []byte {
	b, _ := json.Marshal(v)
	return append(b, '\n')
}
