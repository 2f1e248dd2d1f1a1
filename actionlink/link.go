package actionlink

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentmux/agentmux/wire"
)

// Action is what a link does: answer Request with Value, as Person, until Expires.
type Action struct {
	Request string          `json:"r"`
	Person  string          `json:"p"`
	Label   string          `json:"l"` // what the person sees: "Approve", "Deny", an option
	Value   json.RawMessage `json:"v"`
	Expires int64           `json:"e"` // Unix seconds: the request's deadline
}

// Errors of Check.
var (
	ErrForged  = errors.New("this link was not made by agentmux, or was changed")
	ErrExpired = errors.New("this link has expired: the request's deadline has passed")
)

// MinSecret is the shortest secret links may be signed with: 128 bits in hex.
const MinSecret = 32

// Key derives the links' signing key from secret, the value of the variable env
// names; an unset or short one is refused, saying so.
func Key(env, secret string) ([]byte, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("$%s, the secret action links are signed with, is unset or shorter than %d characters: export the same secret to the nodes and the console (e.g. `openssl rand -hex 32`)", env, MinSecret)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("agentmux action links"))
	return mac.Sum(nil), nil
}

// Sign is a's token under key.
func Sign(key []byte, a *Action) string {
	payload, _ := json.Marshal(a)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sum(key, payload))
}

// Check returns the action token holds, if key signed it and it has not expired at now.
func Check(key []byte, token string, now time.Time) (*Action, error) {
	p, s, ok := strings.Cut(token, ".")
	if !ok {
		return nil, ErrForged
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, sum(key, payload)) {
		return nil, ErrForged
	}
	var a Action
	if err := json.Unmarshal(payload, &a); err != nil || a.Request == "" || a.Person == "" || len(a.Value) == 0 {
		return nil, ErrForged
	}
	if now.Unix() >= a.Expires {
		return nil, ErrExpired
	}
	return &a, nil
}

func sum(key, payload []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(payload)
	return mac.Sum(nil)
}

// URL is the console's page for a token of the notify named notify.
func URL(console, notify, token string) string {
	return strings.TrimRight(console, "/") + "/act/" + url.PathEscape(notify) + "/" + token
}

// For are the actions a person may take on p: Approve and Deny for an approval
// without options, Yes and No for a confirm question, one per option otherwise, and
// none for a question that takes free text or several options (answered in the
// console). Each is p's, until its deadline; Person is left to the caller.
func For(p *wire.PendingRequest) []Action {
	var body struct {
		Kind  string `json:"kind"`
		Multi bool   `json:"multi"`
	}
	_ = json.Unmarshal(p.Body, &body)
	var out []Action
	switch {
	case body.Multi:
	case len(p.Options) > 0:
		for _, o := range p.Options {
			v, _ := json.Marshal(o)
			out = append(out, Action{Label: o, Value: v})
		}
	case p.Type == "approval":
		out = []Action{{Label: "Approve", Value: json.RawMessage(`"yes"`)}, {Label: "Deny", Value: json.RawMessage(`"no"`)}}
	case p.Type == "budget":
		out = []Action{{Label: "Raise the budget", Value: json.RawMessage(`"yes"`)}, {Label: "End the session", Value: json.RawMessage(`"no"`)}}
	case p.Type == "question" && body.Kind == "confirm":
		out = []Action{{Label: "Yes", Value: json.RawMessage(`true`)}, {Label: "No", Value: json.RawMessage(`false`)}}
	}
	for i := range out {
		out[i].Request, out[i].Expires = p.ID, p.Deadline.Unix()
	}
	return out
}

// Describe says what a acts as, for a page or a log.
func (a *Action) Describe() string {
	return fmt.Sprintf("%s on %s as %s", a.Label, a.Request, a.Person)
}
