package dialect

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/protocol"
)

// Native is the dialect name of the canonical protocol itself.
const Native = "ndjson"

// Dialect is one protocol for one process: a vendor's, or agentmux's own (Native).
type Dialect interface {
	// Canonical reports whether the process speaks agentmux's own protocol
	// (protocol.md). Its lines are then framed and decoded as they are read, off the
	// actor, and its progress, log and heartbeat lines published without the actor; any
	// other dialect's lines go to the actor whole, for Decode, which keeps its state.
	Canonical() bool
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
	// Init is what is written once the process has started, before any session, or
	// nil: the canonical protocol's init, when the host has params.
	Init() []byte
	// Prompt is what starts a session: its text, its id, and what its earlier attempts
	// did (PreviousAttempt).
	Prompt(p protocol.Prompt) []byte
	// Continue is another turn of the session's conversation, after its result: the
	// agent keeps what it knows (a typed result's new prompt, with the schema the
	// result missed in p.Schema and p.SchemaError).
	Continue(p protocol.Prompt) []byte
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

// ModelFlags is a dialect whose agent is pointed at its model by flags, not by its
// provider's environment variables alone (Codex reads OPENAI_BASE_URL for nothing).
type ModelFlags interface {
	// ModelArgs point the agent at base, an OpenAI-compatible API (the node's gateway),
	// with the key in OPENAI_API_KEY. They come after the host's args, and win.
	ModelArgs(base string) []string
}

// Transcripts is a dialect whose agent keeps its conversation in a file of its own and
// resumes it by its id (SessionArgs): a node carries the file to bring a session back
// on another node. Its Decode marks the agent's safe points (a tool's result in) with
// a canonical checkpoint message, whose state is the conversation's id.
type Transcripts interface {
	// Conversation is the id of the agent's conversation, "" until the agent said it.
	Conversation() string
	// Transcript is the file holding conversation id of an agent working in dir (its
	// real path) with environment env (as exec.Cmd's, the last of a name winning):
	// where the agent keeps it, and looks for it when resumed.
	Transcript(env []string, dir, id string) string
}

// TranscriptPlacer is a Transcripts dialect whose agent finds a transcript put back
// only with more beside it: Place readies that for the transcript of an agent working
// in dir (its real path) about to be written at path, its folder made.
type TranscriptPlacer interface {
	Place(env []string, dir, path string) error
}

// checkpointMark is the canonical checkpoint a Transcripts dialect marks its agent's
// safe point with: its state is the conversation's id. None before the agent said it.
func checkpointMark(conversation string) []*protocol.Message {
	if conversation == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"type": "checkpoint", "state": map[string]string{"conversation": conversation}})
	m, err := protocol.Decode(b, protocol.PlainTextLog)
	if err != nil {
		return nil
	}
	return []*protocol.Message{m}
}

// resumedConversation is the conversation a resumed session's agent goes on in: its
// checkpoint's state, as checkpointMark made it; "" for a session that starts afresh.
func resumedConversation(p protocol.Prompt) string {
	if p.Resume == nil {
		return ""
	}
	var st struct {
		Conversation string `json:"conversation"`
	}
	_ = json.Unmarshal(p.Resume.State, &st)
	return st.Conversation
}

// Options are what a dialect takes from its host.
type Options struct {
	Dir string // where the process works (absolute)
	// Command is the process's program: an ACP agent is known by it (StateOf).
	Command string
	// The canonical protocol's: the host's params (its init), whether the agent reads
	// its prompts as plain text, and what its plain-text output lines are.
	Params    json.RawMessage
	TextInput bool
	PlainText protocol.PlainText
}

// New returns the dialect name of a process with options o: "" is Native.
func New(name string, o Options) (Dialect, error) {
	switch name {
	case "", Native:
		return &native{o: o}, nil
	case ClaudeCode:
		return newClaude(), nil
	case ACP:
		a := newACP(o.Dir)
		switch acpAgent(o.Command) {
		case claudeAgentACP:
			a.keeps = true
			return claudeACP{a}, nil
		case "gemini":
			a.keeps = true
			return geminiACP{a}, nil
		}
		return a, nil
	case Codex:
		return newCodex(o.Dir), nil
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

// promptText is the text a vendor's agent is prompted with: the prompt, and what the
// session's earlier attempts did, in words.
func promptText(p protocol.Prompt) string {
	if p.Resume != nil { // the conversation it goes on holds the prompt
		return p.Resume.Note
	}
	prev := p.PreviousAttempt
	if prev == nil {
		return p.Text
	}
	var b strings.Builder
	b.WriteString(p.Text)
	fmt.Fprintf(&b, "\n\nAn earlier attempt of this task (attempt %d) failed: %s", prev.Attempt, prev.Error)
	if len(prev.Requests) > 0 {
		b.WriteString("\nIt had asked, and was answered:")
		for _, r := range prev.Requests {
			fmt.Fprintf(&b, "\n- %s %q: %s (by %s)", r.Type, r.Text, r.Value, r.Decider)
		}
	}
	return b.String()
}

// vendor is what every vendor's dialect has in common: its own protocol, no init.
type vendor struct{}

func (vendor) Canonical() bool { return false }
func (vendor) Init() []byte    { return nil }
