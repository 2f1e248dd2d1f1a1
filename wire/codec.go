package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentmux/agentmux/internal/rawjson"
)

// The request path writes and reads these records several times per request, without
// reflection, as encoding/json would by the structs' tags (codec_test.go holds them to
// that). codec_gen.go has the codecs made from the tags alone: adding a field to one of
// those structs is that edit and `go generate ./wire`. A Reply's wire form differs from
// the struct (its Kind is two flags), so its codec is written here.
//
//go:generate go run ../internal/codecgen/cmd -o codec_gen.go -encode Ask,AuditRecord,RequestAnswered,SessionStarted,SessionEnded -decode Ask

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

// DecodeAsk reads an ask as json.Unmarshal would, without reflection in the plain case.
func DecodeAsk(data []byte) (*Ask, error) {
	a, c := new(Ask), rawjson.NewCopy(data)
	if rawjson.Fields(data, func(key, value []byte) bool { return a.field(&c, key, value) }) {
		return a, nil
	}
	*a = Ask{}
	return a, json.Unmarshal(data, a)
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
// smallInteger is integer for an int field: false for a number an int does not hold.
func smallInteger(value []byte, dst *int) bool {
	var n int64
	if !integer(value, &n) || n != int64(int(n)) {
		return false
	}
	*dst = int(n)
	return true
}

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
