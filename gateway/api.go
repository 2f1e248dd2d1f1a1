package gateway

import (
	"net/http"
	"strings"

	"github.com/agentmux/agentmux/config"
)

// api is a model API the gateway speaks: what a connection's provider serves.
type api int

const (
	apiOpenAI    api = iota // Chat Completions and Responses, and every server that speaks them
	apiAnthropic            // the Messages API
	apiGemini               // Gemini's generateContent
)

// apiOf is the API of a connection's provider; false: none the gateway speaks.
func apiOf(provider string) (api, bool) {
	switch {
	case provider == config.ProviderAnthropic:
		return apiAnthropic, true
	case provider == config.ProviderGemini:
		return apiGemini, true
	case config.OpenAICompatible(provider):
		return apiOpenAI, true
	}
	return apiOpenAI, false
}

// String is the provider's name in OpenTelemetry's GenAI conventions
// (gen_ai.provider.name).
func (a api) String() string {
	switch a {
	case apiAnthropic:
		return "anthropic"
	case apiGemini:
		return "gcp.gemini"
	}
	return "openai"
}

// home is the provider's own address, for a connection that names no base_url.
func (a api) home() string {
	switch a {
	case apiAnthropic:
		return "https://api.anthropic.com"
	case apiGemini:
		return "https://generativelanguage.googleapis.com"
	}
	return "https://api.openai.com/v1"
}

// endpoints are the calls the gateway passes on: the model APIs, not the rest of what
// a key may do (files, batches, caches, fine-tuning, administration). A "*" stands for
// a model's name.
func (a api) endpoints() []string {
	switch a {
	case apiAnthropic:
		return []string{"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "GET /v1/models/*"}
	case apiGemini:
		return []string{"POST /v1beta/models/*:generateContent", "POST /v1beta/models/*:streamGenerateContent",
			"POST /v1beta/models/*:countTokens", "GET /v1beta/models", "GET /v1beta/models/*"}
	}
	return []string{"POST /chat/completions", "POST /responses", "POST /completions", "GET /models", "GET /models/*"}
}

// endpoint is a call's path (after its connection's name) as endpoints name it, and
// the model the path names, if it names one: Gemini's calls name their model in their
// path (v1beta/models/gemini-2.5-pro:streamGenerateContent).
func endpoint(method, rest string) (string, string) {
	for _, models := range []string{"v1beta/models/", "v1/models/", "models/"} {
		name, ok := strings.CutPrefix(rest, models)
		if !ok || name == "" || strings.Contains(name, "/") {
			continue
		}
		model, verb, hasVerb := strings.Cut(name, ":")
		if hasVerb {
			return method + " /" + models + "*:" + verb, model
		}
		return method + " /" + models + "*", model
	}
	return method + " /" + rest, ""
}

// tokenOf is the token a call carries: Anthropic's x-api-key, Gemini's
// x-goog-api-key, or a bearer token.
func tokenOf(r *http.Request) string {
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if k := r.Header.Get(h); k != "" {
			return k
		}
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	return ""
}

// setKey puts the connection's key where its provider reads it.
func (a api) setKey(h http.Header, key string) {
	switch a {
	case apiAnthropic:
		h.Set("X-Api-Key", key)
	case apiGemini:
		h.Set("X-Goog-Api-Key", key)
	default:
		h.Set("Authorization", "Bearer "+key)
	}
}
