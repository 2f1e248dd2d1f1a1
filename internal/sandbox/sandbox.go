package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("sandbox: closed (the node is stopping)")

// Sandbox starts programs under one Policy. It is built when it first starts one; a
// build that failed (a writable path missing) is tried again at the next start.
type Sandbox struct {
	name   string // for messages: "hosts.claude"
	policy Policy
	reqs   chan start
	stop   chan struct{}

	mu     sync.Mutex // guards built, temp, profile and closed, and orders a build before Close
	built  bool
	temp   string // the programs' TMPDIR, with Policy.Temp
	closed bool
	// profile is the Seatbelt profile the programs run under, on macOS.
	profile string
}

type start struct {
	cmd  *exec.Cmd
	done chan error
}

// New returns the sandbox of the programs name runs ("hosts.claude", for messages and
// its temporary directory's name).
func New(name string, p Policy) *Sandbox {
	return &Sandbox{name: name, policy: p, reqs: make(chan start), stop: make(chan struct{})}
}

// Start starts cmd in the sandbox, as cmd.Start does; a nil Sandbox is cmd.Start.
func (s *Sandbox) Start(cmd *exec.Cmd) error {
	if s == nil {
		return cmd.Start()
	}
	temp, err := s.ready()
	if err != nil {
		return err
	}
	if temp != "" {
		cmd.Env = withTemp(cmd.Env, temp)
	}
	s.wrap(cmd)
	req := start{cmd: cmd, done: make(chan error, 1)}
	select {
	case s.reqs <- req:
		return <-req.done
	case <-s.stop:
		return ErrClosed
	}
}

// ready builds the sandbox if it is not yet, and returns its TMPDIR.
func (s *Sandbox) ready() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "", ErrClosed
	case !s.built:
		if err := s.build(); err != nil {
			return "", err
		}
		s.built = true
	}
	return s.temp, nil
}

// Close ends the thread that starts the programs, which sends the parent-death signal
// to those still running, and removes their temporary directory. Stop them first.
func (s *Sandbox) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.stop)
	if s.temp != "" {
		_ = os.RemoveAll(s.temp)
	}
}

// build makes the temporary directory and the thread; callers hold mu.
func (s *Sandbox) build() error {
	p := s.policy
	temp := ""
	if p.Temp {
		dir, err := os.MkdirTemp("", tempPattern(s.name))
		if err != nil {
			return fmt.Errorf("sandbox %s: its temporary directory: %w", s.name, err)
		}
		temp = dir
		p.Write = append(append([]string(nil), p.Write...), dir)
	}
	if err := s.restrict(p); err != nil {
		if temp != "" {
			_ = os.RemoveAll(temp)
		}
		return err
	}
	s.temp = temp
	return nil
}

// serve starts what Start sends it until Close, on the thread restrict prepared.
func (s *Sandbox) serve() {
	for {
		select {
		case req := <-s.reqs:
			req.done <- req.cmd.Start()
		case <-s.stop:
			return
		}
	}
}

// withTemp sets TMPDIR (and TMP, TEMP) in env, which exec.Cmd takes as the parent's
// environment when nil.
func withTemp(env []string, dir string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "TMPDIR" && name != "TMP" && name != "TEMP" {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+dir, "TMP="+dir, "TEMP="+dir)
}

// Set is the sandboxes of a node's programs by the manifest table they run for
// ("hosts.claude", "supervisors.gate", "tools.lookup"). A program it has none for
// runs unsandboxed (a nil *Sandbox).
type Set map[string]*Sandbox

// Close closes every sandbox in s.
func (s Set) Close() {
	for _, sb := range s {
		sb.Close()
	}
}
