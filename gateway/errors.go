package gateway

import (
	"encoding/json"
	"net/http"
)

// refuse answers a call the gateway does not pass on, in its provider's error format,
// so that the agent shows why; reason labels gateway_refused_total.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, anthropic bool, status int, reason, message string) {
	g.cfg.Metrics.GatewayRefused.WithLabelValues(reason).Inc()
	g.cfg.Log.Warn("model call refused by the gateway", "reason", reason, "path", r.URL.Path, "remote", r.RemoteAddr, "why", message)
	writeError(w, anthropic, status, "agentmux gateway: "+message)
}

// writeError writes an error as Anthropic's API ({"type":"error","error":{…}}) or
// OpenAI's ({"error":{…}}) would.
func writeError(w http.ResponseWriter, anthropic bool, status int, message string) {
	var body any
	if anthropic {
		body = map[string]any{"type": "error", "error": map[string]string{"type": anthropicType(status), "message": message}}
	} else {
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
