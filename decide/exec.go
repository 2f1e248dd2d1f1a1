package decide

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/internal/procenv"
	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
)

const (
	maxCommandOutput = 1 << 20         // stdout read from a command supervisor or tool
	maxStderrKept    = 2 << 10         // stderr quoted in errors
	commandWaitDelay = 2 * time.Second // after the deadline's SIGKILL, for pipes to close
)

// program is a command run once per request or tool call.
type program struct {
	what string // for messages: `supervisor "x"`, `tool "y"`
	config.Process
	procs   *shim.Registry   // records the process group while it runs
	sandbox *sandbox.Sandbox // confines it (nil: unsandboxed)
}

// run starts p with stdin as its standard input and returns its standard output. The
// process runs in its own group, killed whole when ctx ends.
func (p *program) run(ctx context.Context, stdin []byte) ([]byte, error) {
	cmd, err := p.procs.Command(ctx, p.Command, p.Args...)
	if err != nil {
		return nil, fmt.Errorf("%s: run %s: %w; check its command and working_dir", p.what, p.Command, err)
	}
	cmd.Env = procenv.Build(p.InheritEnv, p.Env)
	cmd.Dir = p.WorkingDir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.WaitDelay = commandWaitDelay
	var stdout limitedBuffer
	stdout.limit = maxCommandOutput
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err = p.sandbox.Start(cmd); err == nil {
		p.procs.Record(cmd)
		err = cmd.Wait()
	}
	p.procs.Forget(cmd)
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %s did not finish before the deadline: %w", p.what, p.Command, ctx.Err())
	case stdout.over:
		return nil, fmt.Errorf("%s: %s wrote more than %d bytes", p.what, p.Command, maxCommandOutput)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("%s: %s exited with %v%s", p.what, p.Command, exit.ProcessState, stderr.quote())
		}
		return nil, fmt.Errorf("%s: run %s: %w; check its command and working_dir", p.what, p.Command, err)
	}
	return stdout.Bytes(), nil
}

// limitedBuffer keeps up to limit bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		b.over = true
		return 0, io.ErrShortWrite
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last maxStderrKept bytes written.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxStderrKept {
		t.b = t.b[len(t.b)-maxStderrKept:]
	}
	return len(p), nil
}

func (t *tailBuffer) quote() string {
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
