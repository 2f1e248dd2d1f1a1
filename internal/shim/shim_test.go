package shim

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as a parent that starts a command through the shim and then waits
// to be killed (SHIM_TEST_PARENT).
func TestMain(m *testing.M) {
	if os.Getenv("SHIM_TEST_PARENT") != "" {
		cmd, err := Command(context.Background(), "sh", "-c", os.Getenv("SHIM_TEST_PARENT"))
		if err != nil {
			os.Exit(3)
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			os.Exit(4)
		}
		_ = cmd.Wait()
		select {} // until killed
	}
	os.Exit(m.Run())
}

func shimmed(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd, err := Command(context.Background(), "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestExitStatusPassesThrough(t *testing.T) {
	out, err := shimmed(t, "echo hello; echo oops >&2; exit 3").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || string(out) != "hello\noops\n" {
		t.Fatalf("exit %v, output %q; want status 3 and both lines", err, out)
	}
	err = shimmed(t, "kill -TERM $$").Run()
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("a command killed by SIGTERM: %v", err)
	}
	// The shim says nothing of its own: a shell's job report ("Killed") would read as
	// the command's last stderr line.
	out, err = shimmed(t, "kill -KILL $$").CombinedOutput()
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || len(out) > 0 {
		t.Fatalf("a command killed by SIGKILL: %v, output %q; want the signal and no output", err, out)
	}
	cmd := shimmed(t, "read line; echo got $line")
	cmd.Stdin = strings.NewReader("it\n")
	if out, err := cmd.Output(); err != nil || string(out) != "got it\n" {
		t.Fatalf("stdin: %q %v", out, err)
	}
}

// TestTermReachesTheCommand: SIGTERM to the group ends a command that acts on it, and
// the shim waits for it and dies of the same signal.
func TestTermReachesTheCommand(t *testing.T) {
	cmd := shimmed(t, "trap 'echo bye; exit 7' TERM; echo ready; while :; do sleep 0.05; done")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, _ := r.ReadString('\n'); line != "ready\n" {
		t.Fatalf("first line %q", line)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := r.ReadString('\n')
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 7 || rest != "bye\n" {
		t.Fatalf("after SIGTERM: %v, %q; want the command's own exit 7 after its goodbye", err, rest)
	}
}

func TestMissingCommand(t *testing.T) {
	if _, err := Command(context.Background(), "no-such-command-xyz"); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
}

// TestGroupDiesWithParent: a parent starts a command through the shim; the command
// starts a grandchild in the background. SIGKILL to the parent takes the grandchild
// down within 2 s.
func TestGroupDiesWithParent(t *testing.T) {
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "SHIM_TEST_PARENT=sleep 1001 & echo $!; sleep 1002")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(2 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for alive(grandchild) {
		select {
		case <-deadline:
			t.Fatalf("the grandchild %d outlived its killed grandparent by 2 s", grandchild)
		case <-tick.C:
		}
	}
}

// alive reports whether pid runs (a zombie, reaped by init soon, does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// TestLowerNamesTheGroupItCouldNotLower: a group that is gone is an error naming it.
func TestLowerNamesTheGroupItCouldNotLower(t *testing.T) {
	cmd, err := Command(context.Background(), "true")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	err = Lower(cmd.Process.Pid, 5)
	if err == nil || !errors.Is(err, syscall.ESRCH) || !strings.Contains(err.Error(), "process group "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Lower of a group that has exited: %v; want ESRCH naming the group", err)
	}
}
