package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a peer's server or service: a child process whose output goes to a log
// file in its run's directory.
type proc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once it has exited
	err     error         // how it exited, once done is closed
}

// startProc starts binary with args, its output to dir/name.log.
func startProc(dir, name, binary string, args ...string) (*proc, error) {
	return startProcEnv(dir, name, nil, binary, args...)
}

// startProcEnv is startProc with env added to this process's environment.
func startProcEnv(dir, name string, env []string, binary string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = out, out, dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, binary, err)
	}
	p := &proc{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited is how the process exited, or nil while it runs.
func (p *proc) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("%s exited", filepath.Base(p.cmd.Path))
		}
		return fmt.Errorf("%s: %w", filepath.Base(p.cmd.Path), p.err)
	default:
		return nil
	}
}

// stopGrace is how long a peer's process has to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// stop ends the process: SIGTERM, then SIGKILL after stopGrace. It returns once the
// process has exited.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freePorts returns n loopback ports free as of now.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// backoffStop wraps an error that poll must not retry.
type backoffStop struct{ err error }

func (b backoffStop) Error() string { return b.err.Error() }

// pollEvery is how often poll tries.
const pollEvery = 100 * time.Millisecond

// poll calls try until it returns nil, returns a backoffStop, ctx ends or wait passes;
// the error is try's last.
func poll(ctx context.Context, wait time.Duration, try func() error) error {
	deadline := time.Now().Add(wait)
	for {
		err := try()
		var stop backoffStop
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return stop.err
		case time.Now().After(deadline):
			return fmt.Errorf("not ready after %s: %w", wait, err)
		}
		select {
		case <-time.After(pollEvery):
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		}
	}
}
