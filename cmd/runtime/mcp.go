package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/mcptools"
)

// mcpCommand is `agentmux mcp`: agentmux's MCP tools (approve, ask) over stdio, for an
// agent that starts its MCP servers as processes. Each call goes to the console's
// /v1/mcp with the token in AGENTMUX_API_TOKEN; the process is one attached session.
func mcpCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcp", stdout, stderr)
	base := fs.String("url", os.Getenv(envURL), "the console's `URL` (default $"+envURL+", else http://"+config.DefaultConsoleAddr+")")
	source := fs.String("source", "", "the [attached.X] `source` (may be left out when the manifest has one)")
	unreachable := fs.String("unreachable", config.UnreachableDeny, "what approve answers when the console cannot be reached: `deny` (ask denies too: a permission prompt tool has no one to ask)")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	if *unreachable != config.UnreachableDeny && *unreachable != config.UnreachableAsk {
		return usageError(stderr, fmt.Errorf("--unreachable %q: use deny or ask", *unreachable))
	}
	endpoint, err := endpointURL(*base, "/v1/mcp", *source)
	if err != nil {
		return usageError(stderr, err)
	}
	token := os.Getenv(envAPIToken)
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		if token == "" {
			return nil, fmt.Errorf("%s is not set: the console takes MCP calls only with a token of its [[api.tokens]]", envAPIToken)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "agentmux mcp", Version: "v1"}, nil)
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	}
	proxy := mcptools.NewProxy(connect, *unreachable)
	defer proxy.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A call in flight when the agent closes stdin is still answered before the end.
	if err := proxy.Server("v1").Run(ctx, mcptools.Stdio(ctx, os.Stdin, os.Stdout)); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "agentmux mcp:", err)
		return exitError
	}
	return exitOK
}

// bearer sends each request with the API token.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
