package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("sandbox: closed (the node is stopping)")

// Sandbox starts programs under one Policy. It is built when it first starts one; a
// build that failed (a writable path missing) is tried again at the next start. It is
// built again when the ports this machine's agentmux processes announce have changed
// since (Announce), so that a program is denied every one listening when it starts.
type Sandbox struct {
	name   string // for messages: "hosts.claude"
	policy Policy
	stop   chan struct{}

	mu     sync.Mutex // guards domain, older, temp and closed, and orders a build before Close
	domain *domain    // nil until built
	older  []*domain  // earlier builds whose programs may still run
	temp   string     // the programs' TMPDIR, with Policy.Temp
	closed bool
}

// domain is one build of a sandbox: the ports it denies, and what starts its programs.
// An earlier build is kept while a program it started runs: a child's parent-death
// signal follows the thread that started it.
type domain struct {
	ports []uint16
	reqs  chan start    // served on the domain's thread
	quit  chan struct{} // ends the thread, once its programs are gone
	// pids are the programs it started, and starting those it is starting, guarded by
	// the Sandbox's mu: it is retired only when both are none.
	pids     []int
	starting int
	shed     bool // its thread, run as root, sheds its capabilities (Policy.As)
	// profile is the Seatbelt profile the programs run under, on macOS.
	profile string
}

func newDomain() *domain { return &domain{reqs: make(chan start), quit: make(chan struct{})} }

// running reports whether a program d started or is starting may still run (or be
// unwaited for).
func (d *domain) running() bool { return d.starting > 0 || slices.ContainsFunc(d.pids, alive) }

type start struct {
	cmd  *exec.Cmd
	done chan error
}

// New returns the sandbox of the programs name runs ("hosts.claude", for messages and
// its temporary directory's name).
func New(name string, p Policy) *Sandbox {
	return &Sandbox{name: name, policy: p, stop: make(chan struct{})}
}

// Walled is a sandbox of its own for one of s's sessions, named name: it may write
// what s may but the tree shared (a host's workspaces), and of that tree only own (the
// session's checkout). It has its own temporary directory; close it when the session's
// programs are gone. A nil s is nil.
func (s *Sandbox) Walled(name, shared string, own []string) *Sandbox {
	if s == nil {
		return nil
	}
	p := s.policy
	p.Write = slices.DeleteFunc(slices.Clone(p.Write), func(w string) bool { return w == shared })
	p.Write = append(p.Write, own...)
	return New(name, p)
}

// Start starts cmd in the sandbox, as cmd.Start does; a nil Sandbox is cmd.Start.
func (s *Sandbox) Start(cmd *exec.Cmd) error {
	if s == nil {
		return cmd.Start()
	}
	d, temp, err := s.ready()
	if err != nil {
		return err
	}
	if temp != "" {
		cmd.Env = withTemp(cmd.Env, temp)
	}
	if u := s.policy.As; u != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: u.Groups}
	}
	d.wrap(cmd)
	req := start{cmd: cmd, done: make(chan error, 1)}
	err = ErrClosed
	select {
	case d.reqs <- req:
		err = <-req.done
	case <-s.stop:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d.starting--
	if err == nil {
		if len(d.pids)%256 == 255 {
			d.pids = slices.DeleteFunc(d.pids, func(pid int) bool { return !alive(pid) })
		}
		d.pids = append(d.pids, cmd.Process.Pid)
	}
	return err
}

// ready builds the sandbox if it is not yet, or again if the announced ports changed,
// and returns the build, counted as starting a program, and its TMPDIR.
func (s *Sandbox) ready() (*domain, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", ErrClosed
	}
	ports := s.policy.ConnectDeny
	if len(ports) > 0 {
		ports = append(slices.Clone(ports), Announced()...)
		slices.Sort(ports)
		ports = slices.Compact(ports)
	}
	if s.domain == nil || !slices.Equal(s.domain.ports, ports) {
		if err := s.build(ports); err != nil {
			return nil, "", err
		}
	}
	s.domain.starting++ // Start takes it down when the program has started, or not
	return s.domain, s.temp, nil
}

// Close ends the threads that start the programs, which sends the parent-death signal
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

// build makes the temporary directory, once, and a domain denying ports; callers hold
// mu.
func (s *Sandbox) build(ports []uint16) error {
	p := s.policy
	p.ConnectDeny = ports
	if err := s.makeTemp(); err != nil {
		return err
	}
	if s.temp != "" {
		p.Write = append(slices.Clone(p.Write), s.temp)
	}
	d, err := s.restrict(p)
	if err != nil {
		return err
	}
	d.ports = ports
	if s.domain != nil {
		s.older = append(s.older, s.domain)
	}
	s.older = slices.DeleteFunc(s.older, func(o *domain) bool {
		if o.running() {
			return false
		}
		close(o.quit)
		return true
	})
	s.domain = d
	return nil
}

// makeTemp makes the programs' temporary directory, with Policy.Temp, if it is not
// yet; callers hold mu.
func (s *Sandbox) makeTemp() error {
	if !s.policy.Temp || s.temp != "" {
		return nil
	}
	dir, err := os.MkdirTemp("", tempPattern(s.name))
	if err != nil {
		return fmt.Errorf("sandbox %s: its temporary directory: %w", s.name, err)
	}
	if err := s.give(dir); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	s.temp = dir
	return nil
}

// give gives dir to the programs' user, when they run as another.
func (s *Sandbox) give(dir string) error {
	if u := s.policy.As; u != nil {
		if err := os.Chown(dir, int(u.Uid), int(u.Gid)); err != nil {
			return fmt.Errorf("sandbox %s: giving %s to user %s: %w", s.name, dir, u.Name, err)
		}
	}
	return nil
}

// Scratch makes a temporary directory of one program's own inside the sandbox's (a
// session's TMPDIR, which can then be counted and removed with it), given to the
// programs' user. It is "" when the sandbox gives its programs no temporary directory.
// A Start whose cmd.Env sets TMPDIR to it keeps it; the caller removes it.
func (s *Sandbox) Scratch() (string, error) {
	if s == nil {
		return "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if err := s.makeTemp(); err != nil || s.temp == "" {
		return "", err
	}
	dir, err := os.MkdirTemp(s.temp, "program-")
	if err != nil {
		return "", fmt.Errorf("sandbox %s: a program's temporary directory: %w", s.name, err)
	}
	if err := s.give(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// serve starts what d's requests bring until Close, or until d is retired, on the
// thread restrict prepared.
func (s *Sandbox) serve(d *domain) {
	for {
		select {
		case req := <-d.reqs:
			req.done <- req.cmd.Start()
		case <-d.quit:
			return
		case <-s.stop:
			return
		}
	}
}

// withTemp sets TMPDIR (and TMP, TEMP) in env, which exec.Cmd takes as the parent's
// environment when nil, unless env's TMPDIR already lies inside dir (Scratch).
func withTemp(env []string, dir string) []string {
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && strings.HasPrefix(v, dir+string(os.PathSeparator)) {
			return env
		}
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
