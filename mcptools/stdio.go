package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of an MCP server on in and out (stdin and stdout) that
// answers every call it read before its client closed in: the end of in is reported
// to the server only once each call read has its response written, or ctx ends. The
// SDK's own stdio transport cancels the calls in flight at the end of stdin, and their
// answers are lost, though the client may still be reading.
func Stdio(ctx context.Context, in io.Reader, out io.Writer) mcp.Transport {
	c := &calls{}
	c.cond = sync.NewCond(&c.mu)
	context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.cond.Broadcast()
	})
	return &mcp.IOTransport{Reader: &callReader{in: in, calls: c}, Writer: &replyWriter{out: out, calls: c}}
}

// calls counts the calls read and the responses written.
type calls struct {
	mu      sync.Mutex
	cond    *sync.Cond
	read    int
	replied int
	stopped bool
}

func (c *calls) add(read, replied int) {
	if read == 0 && replied == 0 {
		return
	}
	c.mu.Lock()
	c.read += read
	c.replied += replied
	c.mu.Unlock()
	c.cond.Broadcast()
}

// answered waits until every call read is answered, or the server stops.
func (c *calls) answered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.replied < c.read && !c.stopped {
		c.cond.Wait()
	}
}

// callReader reads in, counting the calls among its lines; at its end, it waits for
// their answers before it says so.
type callReader struct {
	in      io.Reader
	calls   *calls
	partial []byte // the start of a line not yet whole
}

func (r *callReader) Read(p []byte) (int, error) {
	n, err := r.in.Read(p)
	if n > 0 {
		r.partial = append(r.partial, p[:n]...)
		read := 0
		for {
			i := bytes.IndexByte(r.partial, '\n')
			if i < 0 {
				break
			}
			read += count(r.partial[:i], true)
			r.partial = r.partial[i+1:]
		}
		r.calls.add(read, 0)
	}
	if err == io.EOF {
		r.calls.add(count(r.partial, true), 0) // a last line without its newline
		r.partial = nil
		r.calls.answered()
	}
	return n, err
}

func (r *callReader) Close() error { return nil }

// replyWriter writes out, counting the responses.
type replyWriter struct {
	out   io.Writer
	calls *calls
}

func (w *replyWriter) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	if err == nil {
		w.calls.add(0, count(p, false))
	}
	return n, err
}

func (w *replyWriter) Close() error { return nil }

// count is how many of the JSON-RPC messages in line (one, or a batch) are calls
// (calls: a method and an id) or responses (!calls: an id and no method).
func count(line []byte, calls bool) int {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return 0
	}
	var batch []struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if line[0] != '[' {
		line = append(append([]byte{'['}, line...), ']')
	}
	if json.Unmarshal(line, &batch) != nil {
		return 0 // not JSON-RPC: the server answers it with an error of its own, or not at all
	}
	n := 0
	for _, m := range batch {
		// A message without an id, or with a null one (the answer to a line that was
		// not JSON-RPC), is neither a call awaited nor its answer.
		if len(m.ID) == 0 || string(m.ID) == "null" {
			continue
		}
		if calls == (m.Method != "") {
			n++
		}
	}
	return n
}
