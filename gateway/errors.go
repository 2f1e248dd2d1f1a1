package gateway

import (
	"encoding/json"
	"net/http"
)

// refuse answers a call the gateway does not pass on, in its provider's error format,
// so that the agent shows why; reason labels gateway_refused_total.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, a api, status int, reason, message string) {
	g.cfg.Metrics.GatewayRefused.WithLabelValues(reason).Inc()
	g.cfg.Log.Warn("model call refused by the gateway", "reason", reason, "path", r.URL.Path, "remote", r.RemoteAddr, "why", message)
	writeError(w, a, status, "agentmux gateway: "+message)
}

// writeError writes an error as the provider's API would: Anthropic's
// ({"type":"error","error":{type, message}}), Gemini's ({"error":{code, message,
// status}}) or OpenAI's ({"error":{message, type, param, code}}).
func writeError(w http.ResponseWriter, a api, status int, message string) {
	var body any
	switch a {
	case apiAnthropic:
		body = map[string]any{"type": "error", "error": map[string]string{"type": anthropicType(status), "message": message}}
	case apiGemini:
		body = map[string]any{"error": map[string]any{"code": status, "message": message, "status": geminiStatus(status)}}
	default:
		body = map[string]any{"error": map[string]any{"message": message, "type": openAIType(status), "param": nil, "code": openAICode(status)}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func anthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusBadRequest:
		return "invalid_request_error"
	}
	return "api_error"
}

func openAIType(status int) string {
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

func openAICode(status int) any {
	switch status {
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusForbidden:
		return "permission_denied"
	case http.StatusNotFound:
		return "not_found"
	}
	return nil
}

// geminiStatus is Google's canonical code of an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	}
	return "UNAVAILABLE"
}
