package dialect

import (
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/protocol"
)

// claudeACP is claude-agent-acp: its ACP session is a Claude Code session of the same
// id, kept where Claude Code keeps its transcripts, so a node carries it as it does
// Claude Code's, and the agent goes on in it with session/resume or session/load.
type claudeACP struct{ *acp }

// Conversation is the current ACP session, once session/new or a resume said it.
func (c claudeACP) Conversation() string { return c.conversation }

// Transcript is Claude Code's, for the same session id.
func (c claudeACP) Transcript(env []string, dir, id string) string {
	return claudeTranscript(env, dir, id)
}

// acpResume is how an ACP agent's session goes on in its conversation on another node:
// what the agent offers (initialize's agentCapabilities), and the session being
// brought back.
type acpResume struct {
	canResume, canLoad bool
	id                 string // the conversation the queued prompt goes on in
	fresh              string // the queued prompt as a session started afresh
	loading            string // the session whose session/load replays its history
	replayed           int    // the updates of that history, not published again
}

// begin readies the resume of p's conversation, if p is brought back from one.
func (r *acpResume) begin(p protocol.Prompt) {
	r.id, r.loading, r.replayed = resumedConversation(p), "", 0
	r.fresh = p.Text + "\n\nThis task was begun on another node, and its conversation could not be brought here. Check what is already done in the working directory, then do the task."
}

// offered reads what an initialize result says the agent can do: session/resume
// (agentCapabilities.sessionCapabilities.resume) and session/load (loadSession).
func (r *acpResume) offered(result json.RawMessage) {
	var init struct {
		Caps struct {
			LoadSession bool `json:"loadSession"`
			Session     struct {
				Resume json.RawMessage `json:"resume"`
			} `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	_ = json.Unmarshal(result, &init)
	r.canLoad = init.Caps.LoadSession
	r.canResume = len(init.Caps.Session.Resume) > 0 && string(init.Caps.Session.Resume) != "null"
}

// replaying reports whether m is an update of the history a session/load replays: the
// conversation the agent had is in the checkpoint's transcript, and was published
// when it happened.
func (r *acpResume) replaying(m *rpcMessage) bool {
	if r.loading == "" || m.Method != "session/update" {
		return false
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.SessionID != r.loading {
		return false
	}
	r.replayed++
	return true
}

// openSession opens the queued prompt's session: a new one, or the conversation it is
// brought back in, resumed (no history sent again) where the agent offers that, else
// loaded; an agent that offers neither starts the task afresh, saying so.
func (a *acp) openSession() []byte {
	params := map[string]any{"cwd": a.cwd, "mcpServers": []any{}}
	r := &a.resumed
	switch {
	case r.id == "":
		return a.call("session/new", params)
	case r.canResume:
		params["sessionId"] = r.id
		return a.call("session/resume", params)
	case r.canLoad:
		params["sessionId"], r.loading = r.id, r.id
		return a.call("session/load", params)
	}
	a.queued, r.id = r.fresh, ""
	return a.call("session/new", params)
}

// reopened prompts the session a session/resume or session/load brought back.
func (a *acp) reopened(method string, result json.RawMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	var r struct {
		Models struct {
			CurrentModelID string `json:"currentModelId"`
		} `json:"models"`
	}
	_ = json.Unmarshal(result, &r)
	id, said := a.resumed.id, "acp session "+a.resumed.id+" resumed"
	if method == "session/load" {
		said = fmt.Sprintf("acp session %s loaded (%d updates of its history replayed, not published again)", id, a.resumed.replayed)
	}
	a.resumed.id, a.resumed.loading = "", ""
	return a.opened(id, r.Models.CurrentModelID, said, raw)
}

// notResumed starts the task afresh when the agent could not go on in its
// conversation, and says why.
func (a *acp) notResumed(method string, m *rpcMessage, raw []byte) ([]*protocol.Message, []byte, error) {
	id := a.resumed.id
	a.queued, a.resumed.id, a.resumed.loading = a.resumed.fresh, "", ""
	msgs, _, err := one(canonical(map[string]any{"type": "log",
		"message": fmt.Sprintf("acp %s of conversation %s failed: %s (%d); the task starts afresh", method, id, m.Error.Message, m.Error.Code)}, raw))
	return msgs, a.openSession(), err
}
