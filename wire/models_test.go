package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAnExchangeFitsTheServersLimit: an exchange whose bodies are larger than a message
// may be (and full of what JSON escapes) is stored cut to fit, as JSON, saying which
// body was cut; one that fits is whole.
func TestAnExchangeFitsTheServersLimit(t *testing.T) {
	const limit = 1 << 20
	x := &ModelExchange{ID: "s.0.model.1", Request: strings.Repeat(`{"q":"\u00e9"}`+"\n", 300_000), Response: "data: ok\n\n", RequestBytes: 4_200_000, ResponseBytes: 10}
	data := x.AppendJSON(nil, limit)
	var back ModelExchange
	if len(data) > limit || json.Unmarshal(data, &back) != nil {
		t.Fatalf("%d bytes, valid JSON: %v; want at most %d", len(data), json.Unmarshal(data, &back) == nil, limit)
	}
	if !back.RequestCut || back.ResponseCut || back.Response != "data: ok\n\n" || len(back.Request) < limit/2 {
		t.Errorf("cut %v/%v, answer %q, request kept %d bytes; want the request alone cut, most of the room kept", back.RequestCut, back.ResponseCut, back.Response, len(back.Request))
	}
	small, whole := &ModelExchange{Request: `{"q":1}`, Response: "{}"}, ModelExchange{}
	if err := json.Unmarshal(small.AppendJSON(nil, limit), &whole); err != nil || whole.RequestCut || whole.Request != `{"q":1}` {
		t.Errorf("a small exchange: %+v %v", whole, err)
	}
}
