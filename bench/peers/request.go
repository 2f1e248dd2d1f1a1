package peers

import (
	"encoding/json"
	"fmt"

	"github.com/agentmux/agentmux/protocol"
)

// request is what a peer is asked: a request of the agent's, and its default when
// nobody answers it.
type request struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Fallback string `json:"fallback,omitempty"`
}

func newRequest(m *protocol.Message, fallback json.RawMessage) (request, error) {
	r := request{ID: m.ID, Type: string(m.Type), Text: m.RequestText()}
	if fallback != nil {
		if err := json.Unmarshal(fallback, &r.Fallback); err != nil || r.Fallback == "" {
			return r, fmt.Errorf("request %s: the default %s is not a non-empty JSON string", m.ID, fallback)
		}
	}
	return r, nil
}

// rule decides a request as B1's responder and loadgen's static supervisor do:
// approvals are allowed, questions answered "unit". Restate's rule service
// (restate/service.mjs) decides the same way.
func rule(r request) string {
	if r.Type == string(protocol.TypeApproval) {
		return "yes"
	}
	return "unit"
}
