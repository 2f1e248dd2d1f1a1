package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Bounds of a git command.
const (
	localTimeout = time.Minute      // one that reads and writes the disk only
	fetchTimeout = 10 * time.Minute // one that may fetch or push over a network
	errTail      = 600              // bytes of git's stderr an error quotes
)

// hardening are the settings every git command agentmux runs takes over what the
// repository's configuration says: an agent's hooks and file-system monitor do not run
// for agentmux, and nothing prompts.
var hardening = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgSign=false",
	"-c", "gc.auto=0", "-c", "maintenance.auto=false"}

// git runs git commands in a host's environment, started where its agents start.
type git struct {
	env   []string
	start func(*exec.Cmd) error // nil: cmd.Start
}

// run runs git with args in dir (or the process's own directory when empty), within
// timeout, and returns its standard output. Its error quotes git's standard error.
func (g git) run(ctx context.Context, timeout time.Duration, dir string, args ...string) (string, error) {
	return g.runWith(ctx, timeout, dir, nil, args...)
}

// runWith is run with env's variables added to the host's.
func (g git) runWith(ctx context.Context, timeout time.Duration, dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("git", append(append([]string(nil), hardening...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(append([]string(nil), g.env...), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // an ssh it starts goes with it
	start := g.start
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("git %s: %w; check that git is installed and on the host's PATH", args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("did not end within %v", timeout)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = ctx.Err()
		}
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > errTail {
			msg = "…" + msg[len(msg)-errTail:]
		}
		if msg != "" {
			return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return stdout.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}
