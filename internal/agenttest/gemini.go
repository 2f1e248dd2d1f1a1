package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The Gemini CLI the tests run (keep in step with .ci/run).
const GeminiVersion = "0.61.0" // @google/gemini-cli

// Gemini returns the real `gemini` CLI.
func Gemini(t testing.TB) string {
	return NPMAgent(t, "@google/gemini-cli", GeminiVersion, "gemini")
}

// GeminiAPI is a scripted Gemini API (generateContent, streamed as server-sent events),
// as the Gemini CLI uses it through GOOGLE_GEMINI_BASE_URL. The conversation's turn n
// (after n function responses in its contents) plays script[n]; the CLI's side calls
// (those that declare no tools: its checks of who speaks next, its model router) get a
// short JSON answer that lets the conversation go on as scripted.
type GeminiAPI struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	script []Call
	last   []any    // the latest main request's contents
	keys   []string // the x-goog-api-key of each generateContent call
}

// NewGeminiAPI serves script until the test ends.
func NewGeminiAPI(t testing.TB, script ...Call) *GeminiAPI {
	f := &GeminiAPI{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API's base URL (GOOGLE_GEMINI_BASE_URL).
func (f *GeminiAPI) URL() string { return f.srv.URL }

// Keys are the API keys the generateContent calls came with, in order. Each call is
// answered with 100 tokens in and 20 out.
func (f *GeminiAPI) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

// Replay starts a new script for the next conversation.
func (f *GeminiAPI) Replay(script ...Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.last = script, nil
}

func (f *GeminiAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Contents []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
		Tools []any `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		writeJSONBody(w, map[string]any{"totalTokens": 100})
		return
	case !strings.Contains(r.URL.Path, ":generateContent") && !strings.Contains(r.URL.Path, ":streamGenerateContent"):
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get("X-Goog-Api-Key"))
	f.mu.Unlock()
	var parts []any
	if len(req.Tools) == 0 {
		parts = []any{map[string]any{"text": `{"next_speaker":"user","reasoning":"the script decides","model_choice":"flash","complexity_reasoning":"scripted","complexity_score":1}`}}
	} else {
		turn := 0
		var contents []any
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p["functionResponse"] != nil {
					turn++
				}
				contents = append(contents, p)
			}
		}
		f.mu.Lock()
		f.last = contents
		c := Call{Text: "(the script has no more turns)"}
		if turn < len(f.script) {
			c = f.script[turn]
		}
		f.mu.Unlock()
		if c.Name != "" {
			parts = []any{map[string]any{"functionCall": map[string]any{"name": c.Name, "args": c.Args}}}
		} else {
			parts = []any{map[string]any{"text": c.Text}}
		}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
		"modelVersion":  "gemini-fake",
	}
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(resp)
		fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	writeJSONBody(w, resp)
}

// LastContents is the latest main request's contents, as JSON: the conversation the
// model was given.
func (f *GeminiAPI) LastContents() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(f.last)
	return string(b)
}

// Output returns what the model was told of its n-th function call (the
// functionResponse the CLI sent back), in the latest request of the conversation.
func (f *GeminiAPI) Output(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for _, p := range f.last {
		m, _ := p.(map[string]any)
		if m["functionResponse"] != nil {
			if i == n {
				b, _ := json.Marshal(m["functionResponse"])
				return string(b)
			}
			i++
		}
	}
	return ""
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
