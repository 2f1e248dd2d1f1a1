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
func (s *Sandbox) restrict(p Policy) (*domain, error) {
	if Mechanism() == "" {
		return nil, fmt.Errorf("sandbox %s: this Mac has no %s; set sandbox = \"none\" to run it unsandboxed", s.name, sandboxExec)
	}
	profile, err := p.Seatbelt(s.name)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", s.name, err)
	}
	d := newDomain()
	d.profile = profile
	go s.serve(d)
	return d, nil
}

// wrap has cmd run by sandbox-exec under the domain's profile.
func (d *domain) wrap(cmd *exec.Cmd) {
	cmd.Args = append([]string{"sandbox-exec", "-p", d.profile, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sandboxExec
}
