package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// The request path writes these records several times per request; each is appended
// without reflection, as encoding/json would write it by the struct's tags
// (wire_test.go holds them to that).

// AppendJSON appends the ask as JSON.
func (a *Ask) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 160+len(a.Session)+len(a.Host)+len(a.ID)+len(a.Text)+len(a.Default)+len(a.Request)+len(a.Node)))
	o.String("session", a.Session)
	o.String("host", a.Host)
	o.String("type", a.Type)
	o.String("id", a.ID)
	o.String("text", a.Text)
	o.IntOmit("timeout_ms", a.Timeout)
	o.Int("deadline", a.Deadline)
	o.Raw("default", a.Default)
	o.Raw("request", a.Request)
	o.BoolOmit("post_process", a.PostProcess)
	o.StringOmit("node", a.Node)
	o.IntOmit("attempt", int64(a.Attempt))
	if len(a.Conflicts) > 0 {
		b, _ := json.Marshal(a.Conflicts)
		o.Raw("conflicts", b)
	}
	return o.End()
}

// AppendJSON appends the reply as JSON.
func (r *Reply) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 100+len(r.Value)+len(r.Decider)+len(r.Reason)+len(r.Member)+len(r.Claimed)+len(r.Grant)))
	o.RawOmit("value", r.Value)
	o.BoolOmit("use_default", r.Kind == ReplyDefault)
	o.BoolOmit("cancelled", r.Kind == ReplyCancelled)
	o.StringOmit("decider", r.Decider)
	o.StringOmit("reason", r.Reason)
	o.StringOmit("member", r.Member)
	o.StringOmit("claimed", r.Claimed)
	o.StringOmit("scope", r.Scope)
	o.StringOmit("grant", r.Grant)
	return o.End()
}

// AppendJSON appends the audit record as JSON.
func (r *AuditRecord) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 200+len(r.Node)+len(r.Host)+len(r.Session)+len(r.Pipeline)+len(r.Stage)+len(r.Request)+
		len(r.Text)+len(r.Ask)+len(r.By)+len(r.Value)+len(r.Decider)+len(r.Claimed)+len(r.Reason)+len(r.Given)+len(r.GivenBy)+len(r.Error)))
	o.String("kind", r.Kind)
	o.Int("time", r.Time)
	o.String("node", r.Node)
	o.String("host", r.Host)
	o.String("session", r.Session)
	o.Int("attempt", int64(r.Attempt))
	o.StringOmit("pipeline", r.Pipeline)
	o.StringOmit("stage", r.Stage)
	o.StringOmit("request", r.Request)
	o.StringOmit("type", r.Type)
	o.StringOmit("text", r.Text)
	o.RawOmit("ask", r.Ask)
	o.StringOmit("by", r.By)
	o.IntOmit("asked", r.Asked)
	o.RawOmit("value", r.Value)
	o.StringOmit("outcome", r.Outcome)
	o.StringOmit("decider", r.Decider)
	o.StringOmit("claimed", r.Claimed)
	o.StringOmit("member", r.Member)
	o.StringOmit("reason", r.Reason)
	o.RawOmit("given", r.Given)
	o.StringOmit("given_by", r.GivenBy)
	o.StringOmit("scope", r.Scope)
	o.FloatOmit("latency_ms", r.Latency)
	o.FloatOmit("duration_ms", r.Duration)
	o.StringOmit("error", r.Error)
	o.IntOmit("truncated", int64(r.Truncated))
	o.RawOmit("workspace", r.Workspace.raw())
	o.RawOmit("spend", r.Spend.raw())
	return o.End()
}

// AppendJSON appends the request.answered event as JSON.
func (r *RequestAnswered) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 120+len(r.ID)+len(r.Value)+len(r.Decider)+len(r.Claimed)+len(r.Reason)))
	o.String("id", r.ID)
	o.String("type", r.Type)
	o.Raw("value", r.Value)
	o.String("outcome", r.Outcome)
	o.String("decider", r.Decider)
	o.StringOmit("claimed", r.Claimed)
	o.StringOmit("reason", r.Reason)
	o.Float("latency_ms", r.Latency)
	return o.End()
}

// DecodeAsk reads an ask as json.Unmarshal would, without reflection in the plain case.
func DecodeAsk(data []byte) (*Ask, error) {
	a, c := new(Ask), rawjson.NewCopy(data)
	if rawjson.Fields(data, func(key, value []byte) bool { return a.field(&c, key, value) }) {
		return a, nil
	}
	*a = Ask{}
	return a, json.Unmarshal(data, a)
}

// field sets one field of the ask from c's copy; false leaves the ask to encoding/json.
func (a *Ask) field(c *rawjson.Copy, key, value []byte) bool {
	switch string(key) {
	case "session":
		return c.String(value, &a.Session)
	case "host":
		return c.String(value, &a.Host)
	case "type":
		return c.String(value, &a.Type)
	case "id":
		return c.String(value, &a.ID)
	case "text":
		return c.String(value, &a.Text)
	case "node":
		return c.String(value, &a.Node)
	case "deadline":
		return integer(value, &a.Deadline)
	case "timeout_ms":
		return integer(value, &a.Timeout)
	case "attempt":
		var n int64
		if !integer(value, &n) || n != int64(int(n)) {
			return false
		}
		a.Attempt = int(n)
		return true
	case "post_process":
		return boolean(value, &a.PostProcess)
	case "default":
		a.Default = c.Raw(value)
		return true
	case "request":
		a.Request = c.Raw(value)
		return true
	case "conflicts":
		return false // rare: encoding/json reads the ask
	}
	return !foldsTo(key, askKeys)
}

// DecodeReply reads a reply as json.Unmarshal would read its wire form (replyJSON),
// without reflection in the plain case.
func DecodeReply(data []byte) (*Reply, error) {
	r, c := new(Reply), rawjson.NewCopy(data)
	var kind replyFlags
	if rawjson.Fields(data, func(key, value []byte) bool { return r.field(&c, &kind, key, value) }) {
		r.Kind = kind.kind()
		return r, nil
	}
	var w replyJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return &Reply{}, err
	}
	return w.reply(), nil
}

// MarshalJSON writes the reply's wire form.
func (r Reply) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// UnmarshalJSON reads the reply's wire form.
func (r *Reply) UnmarshalJSON(data []byte) error {
	d, err := DecodeReply(data)
	if err != nil {
		return err
	}
	*r = *d
	return nil
}

// replyFlags are the wire's two flags of a reply's kind, as read.
type replyFlags struct{ useDefault, cancelled bool }

func (f replyFlags) kind() ReplyKind {
	switch {
	case f.useDefault:
		return ReplyDefault
	case f.cancelled:
		return ReplyCancelled
	}
	return ReplyValue
}

// replyJSON is a Reply in its wire form, for encoding/json.
type replyJSON struct {
	Value      json.RawMessage `json:"value,omitempty"`
	UseDefault bool            `json:"use_default,omitempty"`
	Cancelled  bool            `json:"cancelled,omitempty"`
	Decider    string          `json:"decider,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Member     string          `json:"member,omitempty"`
	Claimed    string          `json:"claimed,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Grant      string          `json:"grant,omitempty"`
}

func (w *replyJSON) reply() *Reply {
	return &Reply{Kind: replyFlags{w.UseDefault, w.Cancelled}.kind(), Value: w.Value, Decider: w.Decider, Reason: w.Reason,
		Member: w.Member, Claimed: w.Claimed, Scope: w.Scope, Grant: w.Grant}
}

// field sets one field of the reply from c's copy; false leaves the reply to
// encoding/json.
func (r *Reply) field(c *rawjson.Copy, kind *replyFlags, key, value []byte) bool {
	switch string(key) {
	case "value":
		r.Value = c.Raw(value)
		return true
	case "use_default":
		return boolean(value, &kind.useDefault)
	case "cancelled":
		return boolean(value, &kind.cancelled)
	case "decider":
		return c.String(value, &r.Decider)
	case "reason":
		return c.String(value, &r.Reason)
	case "member":
		return c.String(value, &r.Member)
	case "claimed":
		return c.String(value, &r.Claimed)
	case "scope":
		return c.String(value, &r.Scope)
	case "grant":
		return c.String(value, &r.Grant)
	}
	return !foldsTo(key, replyKeys)
}

var (
	askKeys   = []string{"session", "host", "type", "id", "text", "timeout_ms", "deadline", "default", "request", "post_process", "node", "attempt", "conflicts"}
	replyKeys = []string{"value", "use_default", "cancelled", "decider", "reason", "member", "claimed", "scope", "grant"}
)

// foldsTo reports whether key names one of keys in other letter case, which
// encoding/json matches too.
func foldsTo(key []byte, keys []string) bool {
	for _, k := range keys {
		if bytes.EqualFold(key, []byte(k)) {
			return true
		}
	}
	return false
}

// integer reads an integer field; null leaves it as it is.
func integer(value []byte, dst *int64) bool {
	if string(value) == "null" {
		return true
	}
	n, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// boolean reads a true or false field; null leaves it as it is.
func boolean(value []byte, dst *bool) bool {
	switch string(value) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	case "null":
	default:
		return false
	}
	return true
}

// AppendJSON appends the session.started event as JSON.
func (e *SessionStarted) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 120+len(e.Session)+len(e.Host)+len(e.Task)+len(e.Node)+len(e.Pipeline)+len(e.Stage)))
	o.String("session", e.Session)
	o.String("host", e.Host)
	o.StringOmit("task", e.Task)
	o.String("node", e.Node)
	o.Int("attempt", int64(e.Attempt))
	o.StringOmit("pipeline", e.Pipeline)
	o.StringOmit("stage", e.Stage)
	return o.End()
}

// AppendJSON appends the session.ended event as JSON.
func (e *SessionEnded) AppendJSON(dst []byte) []byte {
	o := rawjson.Begin(slices.Grow(dst, 160+len(e.Session)+len(e.Host)+len(e.Task)+len(e.Node)+len(e.Pipeline)+len(e.Stage)+
		len(e.Result)+len(e.Data)+len(e.Error)))
	o.String("session", e.Session)
	o.String("host", e.Host)
	o.StringOmit("task", e.Task)
	o.StringOmit("node", e.Node)
	o.Int("attempt", int64(e.Attempt))
	o.StringOmit("pipeline", e.Pipeline)
	o.StringOmit("stage", e.Stage)
	o.String("outcome", e.Outcome)
	o.RawOmit("result", e.Result)
	o.RawOmit("data", e.Data)
	o.StringOmit("error", e.Error)
	o.Float("duration_ms", e.Duration)
	o.RawOmit("workspace", e.Workspace.raw())
	o.RawOmit("spend", e.Spend.raw())
	return o.End()
}
