//go:build !linux && !darwin

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

// ABI is 0: Landlock is Linux's.
func ABI() int { return 0 }

func (s *Sandbox) restrict(Policy) (*domain, error) {
	return nil, fmt.Errorf("sandbox %s: %s has no Landlock; set sandbox = \"none\" to run it unsandboxed", s.name, runtime.GOOS)
}

// Mechanism is "": this system has no sandbox agentmux uses.
func Mechanism() string { return "" }

func (d *domain) wrap(*exec.Cmd) {}
