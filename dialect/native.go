package dialect

import "github.com/agentmux/agentmux/protocol"

// native is agentmux's own protocol (protocol.md): canonical messages both ways, an
// init with the host's params, in-band capabilities declared by the agent's init_ack.
type native struct{ o Options }

func (*native) Canonical() bool             { return true }
func (*native) Args() []string              { return nil }
func (*native) Capabilities() []string      { return nil } // the agent declares them in init_ack
func (*native) Reusable() bool              { return true }
func (*native) SessionArgs(string) []string { return nil }

func (n *native) Init() []byte {
	if len(n.o.Params) == 0 {
		return nil
	}
	return protocol.AppendInit(nil, n.o.Params)
}

func (n *native) Prompt(p protocol.Prompt) []byte {
	switch {
	case n.o.TextInput:
		return protocol.AppendPromptText(nil, promptText(p))
	case p.PreviousAttempt != nil || p.Resume != nil || p.Traceparent != "":
		return protocol.AppendPromptWith(nil, protocol.Prompt{Text: p.Text, Session: p.Session, PreviousAttempt: p.PreviousAttempt,
			Resume: p.Resume, Traceparent: p.Traceparent, Tracestate: p.Tracestate})
	}
	return protocol.AppendPrompt(nil, p.Text, p.Session)
}

func (n *native) Continue(p protocol.Prompt) []byte {
	if n.o.TextInput {
		return protocol.AppendPromptText(nil, p.Text)
	}
	return protocol.AppendPromptWith(nil, protocol.Prompt{Text: p.Text, Session: p.Session, Schema: p.Schema, SchemaError: p.SchemaError,
		Traceparent: p.Traceparent, Tracestate: p.Tracestate})
}

// Decode decodes one line; the agent's actor has its reader do it instead (Canonical).
func (n *native) Decode(line []byte) ([]*protocol.Message, []byte, error) {
	m, err := protocol.Decode(line, n.o.PlainText)
	if err != nil {
		return nil, nil, err
	}
	return []*protocol.Message{m}, nil, nil
}

func (*native) Answer(_ *protocol.Message, r protocol.Response, _ string) []byte {
	return protocol.AppendResponse(nil, r)
}

func (*native) Interrupt(reason string) []byte { return protocol.AppendInterrupt(nil, reason) }
func (*native) Message(text string) []byte     { return protocol.AppendMessageLine(nil, text) }
