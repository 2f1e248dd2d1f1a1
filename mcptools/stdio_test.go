package mcptools

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eofSignal closes seen when its reader reaches the end.
type eofSignal struct {
	r    io.Reader
	once sync.Once
	seen chan struct{}
}

func (e *eofSignal) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(func() { close(e.seen) })
	}
	return n, err
}

// TestStdioAnswersCallsInFlightAtTheEnd: a client sends a call and closes its end of
// stdin at once (as a one-shot client does); the call, which finishes only after the
// end was read, is still answered on stdout, and the server then stops.
func TestStdioAnswersCallsInFlightAtTheEnd(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	in := &eofSignal{r: inR, seen: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	type none struct{}
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "answers once its client has closed stdin"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, none, error) {
			select {
			case <-in.seen:
			case <-ctx.Done():
				return nil, none{}, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "finished"}}}, none{}, nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, Stdio(ctx, in, outW))
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	write := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1`) {
		t.Fatalf("no answer to initialize: %q %v", lines.Text(), lines.Err())
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	inW.Close()
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, `"id":2`) || !strings.Contains(all, "finished") {
		t.Fatalf("the call in flight when stdin closed was not answered; stdout after it:\n%s", all)
	}
	if err := <-done; err != nil {
		t.Errorf("the server's run: %v", err)
	}
}
