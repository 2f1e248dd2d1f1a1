package api

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/mcptools"
	"github.com/agentmux/agentmux/wire"
)

// mcpServers are the MCP servers of /v1/mcp, one a source: a session is served by its
// source's, which closes it after the source's idle_timeout without a request.
func (s *Server) mcpServers() map[string]http.Handler {
	handlers := map[string]http.Handler{}
	if s.cfg.Manifest == nil {
		return handlers
	}
	for name, a := range s.cfg.Manifest.Attached {
		d := mcptools.Decider{Unreachable: a.Unreachable, Version: "v1",
			Ask: func(ctx context.Context, req *wire.AttachRequest) (*wire.AttachReply, error) {
				return s.attach(ctx, a, req)
			}}
		handlers[name] = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptools.NewServer(d) },
			&mcp.StreamableHTTPOptions{SessionTimeout: a.IdleTimeout.D(), Logger: s.cfg.Log})
	}
	return handlers
}

// mcp serves agentmux's MCP tools (approve, ask) over streamable HTTP: each MCP session
// asks in the attached source ?source= names (or the manifest's only one), as the user
// of the token that opened it; a request of that session with another token is refused.
func (s *Server) mcp(servers map[string]http.Handler) func(http.ResponseWriter, *http.Request, *caller) {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		source, err := s.source(r.URL.Query().Get("source"), "")
		if err != nil {
			apiErrorf(w, http.StatusBadRequest, "invalid", "%v", err)
			return
		}
		// The token is checked already; the SDK's middleware hands its user to the
		// tools, and refuses a session's request whose user is not the one that opened it.
		verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: c.name, Expiration: time.Now().Add(time.Hour)}, nil
		}
		auth.RequireBearerToken(verified, nil)(servers[source.Name]).ServeHTTP(w, r)
	}
}
