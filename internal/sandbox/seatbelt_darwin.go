//go:build darwin

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
)

// sandboxExec runs a program under a Seatbelt profile; it is part of macOS.
const sandboxExec = "/usr/bin/sandbox-exec"

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

// Mechanism is how programs are sandboxed here: "seatbelt", or "" without sandbox-exec.
func Mechanism() string {
	if _, err := os.Stat(sandboxExec); err != nil {
		return ""
	}
	return "seatbelt"
}

// restrict makes p's Seatbelt profile and starts serving; callers hold mu.
func (s *Sandbox) restrict(p Policy) error {
	if Mechanism() == "" {
		return fmt.Errorf("sandbox %s: this Mac has no %s; set sandbox = \"none\" to run it unsandboxed", s.name, sandboxExec)
	}
	profile, err := p.Seatbelt(s.name)
	if err != nil {
		return fmt.Errorf("sandbox %s: %w", s.name, err)
	}
	s.profile = profile
	go s.serve()
	return nil
}

// wrap has cmd run by sandbox-exec under the sandbox's profile.
func (s *Sandbox) wrap(cmd *exec.Cmd) {
	s.mu.Lock()
	profile := s.profile
	s.mu.Unlock()
	cmd.Args = append([]string{"sandbox-exec", "-p", profile, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sandboxExec
}
