package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
)

// apiClient calls the console's API and checks every request and answer against the
// API's own OpenAPI document, with a maintained validator (none: call).
type apiClient struct {
	t   *testing.T
	url string
	v   validator.Validator
}

// newAPIClient fetches /v1/openapi.json, which must be a valid OpenAPI 3.1 document.
func newAPIClient(t *testing.T, url string) *apiClient {
	t.Helper()
	status, doc := call(t, "GET", url+"/v1/openapi.json", "", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", status, doc)
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("the API's document does not parse: %v", err)
	}
	if v := d.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Errorf("the API's document is OpenAPI %s; want 3.1", v)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("the API's document: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("the API's document is not valid OpenAPI: %s (%s) at %d:%d", e.Message, e.Reason, e.SpecLine, e.SpecCol)
		}
		t.FailNow()
	}
	return &apiClient{t: t, url: url, v: v}
}

// do makes one call and checks it against the document: the request as documented, and
// the answer with a documented status and body.
func (a *apiClient) do(method, path, token string, body any) (int, []byte) {
	a.t.Helper()
	return a.send(method, path, token, body, true)
}

// attack makes a call that is wrong on purpose (no token, a bad body) and checks only
// that the answer is one the document describes.
func (a *apiClient) attack(method, path, token string, body any) (int, []byte) {
	a.t.Helper()
	return a.send(method, path, token, body, false)
}

func (a *apiClient) send(method, path, token string, body any, wellFormed bool) (int, []byte) {
	a.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, a.url+path, bytes.NewReader(raw))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if a.v == nil {
		return resp.StatusCode, out
	}
	check, _ := http.NewRequest(method, a.url+path, bytes.NewReader(raw))
	check.Header = req.Header.Clone()
	resp.Body = io.NopCloser(bytes.NewReader(out))
	validate := a.v.ValidateHttpResponse
	if wellFormed {
		validate = a.v.ValidateHttpRequestResponse
	}
	if ok, errs := validate(check, resp); !ok {
		for _, e := range errs {
			a.t.Errorf("%s %s → %d is not as /v1/openapi.json says: %s (%s)\n%s", method, path, resp.StatusCode, e.Message, e.Reason, out)
		}
	}
	return resp.StatusCode, out
}

// askAPerson is a scripted agent's session that waits for a person's approval.
const askAPerson = `{"steps":[{"send":{"type":"approval","id":"a1","description":"ask a person to deploy"}},{"await":"a1"},{"result":"deployed"}]}`

// TestAPITokensAndRoles plays each caller of the API: without a token, with a wrong one,
// and with each role's. Only an operator's token writes; a hook's only puts its agents'
// requests; a viewer's only reads. An operator's writes are done and audited as it.
func TestAPITokensAndRoles(t *testing.T) {
	t.Parallel()
	url, _, _ := apiNode(t, apiManifest(t, "deny"))
	a := newAPIClient(t, url)
	task := map[string]any{"host": "w", "prompt": okScript}
	hookInput := map[string]any{"session_id": "s-hook", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}}
	answer := map[string]any{"value": "yes"}
	endpoints := []struct {
		method, path string
		body         any
		roles        []string // the tokens that may call it
	}{
		{"GET", "/v1/sessions", nil, []string{operatorToken, viewerToken}},
		{"GET", "/v1/pending", nil, []string{operatorToken, viewerToken}},
		{"GET", "/v1/audit?since=1h", nil, []string{operatorToken, viewerToken}},
		{"GET", "/v1/sessions/s-none/audit", nil, []string{operatorToken, viewerToken}},
		{"GET", "/v1/sessions/s-none/checkpoints", nil, []string{operatorToken, viewerToken}},
		{"POST", "/v1/tasks", task, []string{operatorToken}},
		{"POST", "/v1/pending/h-none/answer", answer, []string{operatorToken}},
		{"POST", "/v1/hooks/claude-code", hookInput, []string{operatorToken, hookToken}},
		{"POST", "/v1/hooks/codex", hookInput, []string{operatorToken, hookToken}},
	}
	for _, e := range endpoints {
		if status, body := a.attack(e.method, e.path, "", e.body); status != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d %s; want 401", e.method, e.path, status, body)
		}
		for _, token := range []string{hookToken, viewerToken, operatorToken} {
			status, body := a.do(e.method, e.path, token, e.body)
			allowed := false
			for _, r := range e.roles {
				allowed = allowed || r == token
			}
			if !allowed && status != http.StatusForbidden {
				t.Errorf("%s %s with a token of %s: %d %s; want 403", e.method, e.path, roleOf(token), status, body)
			}
			if allowed && (status == http.StatusForbidden || status == http.StatusUnauthorized) {
				t.Errorf("%s %s with a token of %s: %d %s; want it taken", e.method, e.path, roleOf(token), status, body)
			}
		}
	}

	// An operator queues a task that asks a person; neither a hook's token (an agent's)
	// nor a viewer's can answer it, the operator's can, and the answer is recorded as
	// the operator's token (token:ops, not a person); a second answer is a conflict, an
	// unknown request is not found, and the settled request leaves /v1/pending.
	if status, body := a.do("POST", "/v1/tasks", operatorToken, map[string]any{"host": "w", "prompt": askAPerson, "id": "t-api"}); status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", status, body)
	}
	var id string
	proctest.Within(t, 20*time.Second, func() error {
		_, body := a.do("GET", "/v1/pending", viewerToken, nil)
		var list struct{ Pending []wire.PendingRequest }
		_ = json.Unmarshal(body, &list)
		for _, p := range list.Pending {
			if p.Session == "t-api" {
				id = p.ID
				return nil
			}
		}
		return fmt.Errorf("t-api's approval does not wait for a person: %s", body)
	})
	for _, token := range []string{hookToken, viewerToken} {
		if status, body := a.do("POST", "/v1/pending/"+id+"/answer", token, answer); status != http.StatusForbidden {
			t.Errorf("answering with a token of %s: %d %s; want 403", roleOf(token), status, body)
		}
	}
	if status, body := a.do("POST", "/v1/pending/"+id+"/answer", operatorToken, answer); status != http.StatusOK || !strings.Contains(string(body), `"ok":true`) {
		t.Fatalf("the operator's answer: %d %s", status, body)
	}
	if status, body := a.do("POST", "/v1/pending/"+id+"/answer", operatorToken, answer); status != http.StatusConflict || !strings.Contains(string(body), `"code":"already_answered"`) {
		t.Errorf("a second answer: %d %s; want 409 already_answered", status, body)
	}
	if status, body := a.do("POST", "/v1/pending/h-nosuch/answer", operatorToken, answer); status != http.StatusNotFound || !strings.Contains(string(body), `"code":"no_such_request"`) {
		t.Errorf("an answer to no request: %d %s; want 404 no_such_request", status, body)
	}
	proctest.Within(t, 20*time.Second, func() error {
		for _, c := range []struct {
			query string
			want  bool
		}{{"", false}, {"?state=pending", false}, {"?state=all", true}} {
			status, body := a.do("GET", "/v1/pending"+c.query, viewerToken, nil)
			if status != http.StatusOK || strings.Contains(string(body), `"id":"`+id+`"`) != c.want {
				return fmt.Errorf("GET /v1/pending%s after the answer: %d %s; want it listed: %v", c.query, status, body, c.want)
			}
		}
		return nil
	})
	if status, body := a.do("GET", "/v1/pending?state=done", viewerToken, nil); status != http.StatusBadRequest {
		t.Errorf("GET /v1/pending?state=done: %d %s; want 400", status, body)
	}
	proctest.Within(t, 20*time.Second, func() error {
		_, body := a.do("GET", "/v1/sessions/t-api/audit", viewerToken, nil)
		var records []wire.AuditRecord
		_ = json.Unmarshal(body, &records)
		var by, decider, ended string
		for _, r := range records {
			switch r.Kind {
			case "session.started":
				by = r.By
			case "answer":
				decider = r.Decider
			case "session.ended":
				ended = r.Outcome
			}
		}
		if by != "ops" || decider != "token:ops" || ended != "ok" {
			return fmt.Errorf("t-api's audit: asked for by %q, answered by %q, ended %q; want ops, token:ops, ok\n%s", by, decider, ended, body)
		}
		return nil
	})
	_, body := a.do("GET", "/v1/audit?decider=token:ops&since=1h", viewerToken, nil)
	if !strings.Contains(string(body), `"session":"t-api"`) {
		t.Errorf("a search of the audit for token:ops does not find t-api: %s", body)
	}
	// A search the API cannot read says why, as its Error (the document checks it).
	if status, body := a.do("GET", "/v1/audit?since=yesterday", viewerToken, nil); status != http.StatusBadRequest || !strings.Contains(string(body), `"code":"invalid"`) {
		t.Errorf("GET /v1/audit?since=yesterday: %d %s; want 400 and code invalid", status, body)
	}

	// Tasks the API refuses, each saying why.
	for _, c := range []struct {
		body   map[string]any
		status int
		says   string
	}{
		{map[string]any{"host": "w", "prompt": okScript, "id": "t-api"}, http.StatusConflict, "submitted already"},
		{map[string]any{"host": "nowhere", "prompt": "x"}, http.StatusBadRequest, "no host nowhere"},
		{map[string]any{"host": "laptops", "prompt": "x"}, http.StatusBadRequest, "attached source"},
		{map[string]any{"host": "w"}, http.StatusBadRequest, `a task needs a`},
		{map[string]any{"host": "w", "prompt": "x", "ttl": "5ms"}, http.StatusBadRequest, "at least 1s"},
	} {
		if status, body := a.attack("POST", "/v1/tasks", operatorToken, c.body); status != c.status || !strings.Contains(string(body), c.says) {
			t.Errorf("task %v: %d %s; want %d saying %q", c.body, status, body, c.status, c.says)
		}
	}

	// A wrong token, again and again, is throttled; the right one still gets in.
	throttled := false
	for range 10 {
		status, _ := a.attack("GET", "/v1/sessions", "ffffffffffffffffffffffffffffffff", nil)
		throttled = throttled || status == http.StatusTooManyRequests
	}
	if !throttled {
		t.Error("ten wrong tokens in a row were never throttled")
	}
	if status, body := a.do("GET", "/v1/sessions", viewerToken, nil); status != http.StatusOK {
		t.Errorf("the right token after wrong ones: %d %s", status, body)
	}
}

func roleOf(token string) string {
	switch token {
	case hookToken:
		return "hook"
	case viewerToken:
		return "viewer"
	}
	return "operator"
}

// TestAPIEventStream: a client follows one session's events as server-sent events,
// from its start to its end, without a NATS client.
func TestAPIEventStream(t *testing.T) {
	t.Parallel()
	url, _, _ := apiNode(t, apiManifest(t, "deny"))
	a := newAPIClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/events?session=t-sse", nil)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /v1/events: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if status, body := a.do("POST", "/v1/tasks", operatorToken, map[string]any{"host": "w", "prompt": okScript, "id": "t-sse"}); status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", status, body)
	}
	var types []string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Host, Session, Type string
			Data                json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Session != "t-sse" || ev.Host != "w" || len(ev.Data) == 0 {
			t.Fatalf("an event of the stream: %s (%v); want t-sse's, with its payload", data, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "session.ended" {
			break
		}
	}
	got := strings.Join(types, " ")
	for _, want := range []string{"session.started", "progress", "question", "request.answered", "result", "session.ended"} {
		if !strings.Contains(got, want) {
			t.Errorf("the stream had %s; want a %s event", got, want)
		}
	}
}
