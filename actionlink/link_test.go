package actionlink

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/wire"
)

func TestSignAndCheck(t *testing.T) {
	if _, err := Key("K", "short"); err == nil || !strings.Contains(err.Error(), "$K") {
		t.Fatalf("a short secret: %v", err)
	}
	key, _ := Key("K", strings.Repeat("k", MinSecret))
	other, _ := Key("K", strings.Repeat("o", MinSecret))
	deadline := time.Now().Add(time.Minute)
	a := &Action{Request: "h-1", Person: "alice@example.com", Label: "Approve", Value: json.RawMessage(`"yes"`), Expires: deadline.Unix()}
	token := Sign(key, a)
	got, err := Check(key, token, time.Now())
	if err != nil || got.Request != "h-1" || got.Person != "alice@example.com" || string(got.Value) != `"yes"` {
		t.Fatalf("Check = %+v, %v", got, err)
	}
	if _, err := Check(key, token, deadline); !errors.Is(err, ErrExpired) {
		t.Errorf("at the deadline: %v", err)
	}
	payload, sig, _ := strings.Cut(token, ".")
	for name, bad := range map[string]string{"another key's": Sign(other, a), "no signature": payload, "a cut signature": payload + "." + sig[:10],
		"another payload": Sign(key, &Action{Request: "h-2", Person: "x", Value: json.RawMessage(`1`), Expires: deadline.Unix()})[:len(payload)] + "." + sig, "empty": ""} {
		if _, err := Check(key, bad, time.Now()); !errors.Is(err, ErrForged) {
			t.Errorf("%s token: %v", name, err)
		}
	}
	if u := URL("https://console.example/", "mail", token); u != "https://console.example/act/mail/"+token {
		t.Errorf("URL = %s", u)
	}
}

func TestFor(t *testing.T) {
	deadline := time.Now().Add(time.Minute)
	labels := func(p *wire.PendingRequest) string {
		var out []string
		for _, a := range For(p) {
			if a.Request != p.ID || a.Expires != deadline.Unix() {
				t.Errorf("%+v is not %s's until its deadline", a, p.ID)
			}
			out = append(out, a.Label+"="+string(a.Value))
		}
		return strings.Join(out, " ")
	}
	for want, p := range map[string]*wire.PendingRequest{
		`Approve="yes" Deny="no"`: {Type: "approval"},
		`Yes=true No=false`:       {Type: "question", Body: json.RawMessage(`{"kind":"confirm"}`)},
		`unit="unit" e2e="e2e"`:   {Type: "question", Options: []string{"unit", "e2e"}},
		``:                        {Type: "question"},
		` `:                       {Type: "question", Options: []string{"a", "b"}, Body: json.RawMessage(`{"kind":"select","multi":true}`)},
	} {
		p.ID, p.Deadline = "h-1", deadline
		if got := labels(p); got != strings.TrimSpace(want) {
			t.Errorf("%+v: %q, want %q", p, got, want)
		}
	}
}
