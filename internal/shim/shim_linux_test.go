package shim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// TestMain doubles as a parent that starts a command through the shim and then waits
// to be killed (SHIM_TEST_PARENT).
func TestMain(m *testing.M) {
	if os.Getenv("SHIM_TEST_PARENT") != "" {
		var procs *Registry // with SHIM_TEST_CGROUPS, a cgroup per command
		if os.Getenv("SHIM_TEST_CGROUPS") != "" {
			procs, _ = OpenRegistry("")
			if err := procs.UseCgroups(); err != nil {
				os.Exit(5)
			}
		}
		cmd, err := procs.Command(context.Background(), "sh", "-c", os.Getenv("SHIM_TEST_PARENT"))
		if os.Getenv("SHIM_TEST_WATCH") != "" { // as on a system without a parent-death signal
			cmd, err = commandWatching(context.Background(), "-", true, "sh", []string{"-c", os.Getenv("SHIM_TEST_PARENT")})
		}
		if err != nil {
			os.Exit(3)
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			os.Exit(4)
		}
		procs.Record(cmd)
		_ = cmd.Wait()
		select {} // until killed
	}
	os.Exit(proctest.ExitCode(m.Run()))
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

// killedParent starts a parent (this binary) that runs script through the shim, in a
// cgroup of its own with cgroups; reads the pid the script prints first; then kills the
// parent with SIGKILL, and returns the pid.
func killedParent(t *testing.T, script string, cgroups bool, check func(pid int), env ...string) int {
	t.Helper()
	parent := exec.Command(os.Args[0])
	parent.Env = append(append(os.Environ(), "SHIM_TEST_PARENT="+script), env...)
	if cgroups {
		parent.Env = append(parent.Env, "SHIM_TEST_CGROUPS=1")
	}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if parent.ProcessState == nil {
			_ = parent.Process.Kill()
			_ = parent.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Wait()
		t.Fatalf("no pid from the parent's command (the parent: %v; exit 5: no cgroup here)", parent.ProcessState)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("pid %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if check != nil {
		check(pid)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Reaped at once, as a node's parent (a shell, systemd) does: a zombie still answers
	// a watching shim's kill -0.
	_ = parent.Wait()
	return pid
}

// goneWithin reports whether pid is gone (or a zombie) within d.
func goneWithin(pid int, d time.Duration) bool {
	return proctest.Poll(d, 10*time.Millisecond, func() bool { return !alive(pid) })
}

// TestGroupDiesWithParent: a parent starts a command through the shim; the command
// starts a grandchild in the background. SIGKILL to the parent takes the grandchild
// down within 2 s.
func TestGroupDiesWithParent(t *testing.T) {
	grandchild := killedParent(t, "sleep 1001 & echo $!; sleep 1002", false, nil)
	if !goneWithin(grandchild, 2*time.Second) {
		t.Fatalf("the grandchild %d outlived its killed grandparent by 2 s", grandchild)
	}
}

// TestWatchingShimDiesWithParent: where the kernel sends no signal at a parent's death
// (macOS), the shim watches its parent itself: SIGKILL to the parent takes the
// grandchild down within the watch's second and some.
func TestWatchingShimDiesWithParent(t *testing.T) {
	grandchild := killedParent(t, "sleep 1005 & echo $!; sleep 1006", false, nil, "SHIM_TEST_WATCH=1")
	if !goneWithin(grandchild, 4*time.Second) {
		t.Fatalf("the grandchild %d outlived its killed grandparent by 4 s, with the shim watching", grandchild)
	}
}

// TestWatchEndsWithTheCommand: a watching shim whose command ends leaves nothing of its
// own behind: its group is empty within the watch's second.
func TestWatchEndsWithTheCommand(t *testing.T) {
	cmd, err := commandWatching(context.Background(), "-", true, "sh", []string{"-c", "exit 7"})
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("a watched command's status: %v; want 7", err)
	}
	group := cmd.Process.Pid
	proctest.Eventually(t, "the shim's group is empty once its command ended", func() bool { return syscall.Kill(-group, 0) != nil })
}

// TestDetachedDescendantDiesWithParent: a command starts a process that leaves its
// group (setsid), and SIGKILL goes to the command's parent. In a cgroup of its own the
// detached process dies within 2 s; without one (no cgroup v2, or none the node may
// make) it outlives the parent, the limit docs/security.md states.
func TestDetachedDescendantDiesWithParent(t *testing.T) {
	for _, cgroups := range []bool{true, false} {
		t.Run(map[bool]string{true: "cgroup", false: "group only"}[cgroups], func(t *testing.T) {
			if cgroups {
				testdeps.Cgroups(t, CheckCgroups())
			}
			detached := killedParent(t, "setsid sh -c 'echo $$; exec sleep 1003' & sleep 1002", cgroups, func(pid int) {
				if pgid, _ := syscall.Getpgid(pid); pgid != pid {
					t.Fatalf("the detached process %d is in group %d: it did not leave the shim's", pid, pgid)
				}
				if cgroups {
					// The killed parent leaves its empty cgroups, for the next node to sweep.
					own, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
					_, path, _ := strings.Cut(string(own), "0::")
					mount, _ := cgroup2Mount()
					group := filepath.Join(mount, strings.TrimSpace(path))
					t.Cleanup(func() { removeCgroup(group); _ = os.Remove(filepath.Dir(group)) })
				}
			})
			switch gone := goneWithin(detached, 2*time.Second); {
			case cgroups && !gone:
				t.Fatalf("the detached process %d outlived its killed grandparent by 2 s", detached)
			case !cgroups && gone:
				t.Fatalf("the detached process %d died without a cgroup: the test no longer shows the limit", detached)
			}
		})
	}
}

// TestForgetEndsWhatTheCommandLeft: a command that ended normally leaves a detached
// process behind; Forget kills it with the cgroup, and a node starting on the records of
// one killed before it could Forget (Sweep) kills what its cgroup holds.
func TestForgetEndsWhatTheCommandLeft(t *testing.T) {
	for _, sweep := range []bool{false, true} {
		dir := t.TempDir()
		procs, err := OpenRegistry(dir)
		if err != nil {
			t.Fatal(err)
		}
		testdeps.Cgroups(t, procs.UseCgroups())
		cmd, err := procs.Command(context.Background(), "sh", "-c", "setsid sh -c 'echo $$; exec sleep 1004' &")
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs.Record(cmd)
		line, _ := bufio.NewReader(out).ReadString('\n')
		detached, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("detached pid %q", line)
		}
		t.Cleanup(func() { _ = syscall.Kill(detached, syscall.SIGKILL) })
		_ = cmd.Wait()
		if !alive(detached) {
			t.Fatal("the detached process ended with its command: nothing to show")
		}
		if sweep {
			next, err := OpenRegistry(dir)
			if err != nil {
				t.Fatal(err)
			}
			next.Sweep()
		} else {
			procs.Forget(cmd)
		}
		if alive(detached) {
			t.Fatalf("sweep %v: the detached process %d outlived its command's cgroup", sweep, detached)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("sweep %v: records left: %v", sweep, entries)
		}
		procs.Close()
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

// TestLowerRunsTheCommandBelow: a command lowered by 5 runs 5 below this process's
// niceness (capped at 19) from its first instruction, and so does a child it starts at
// once; the shim itself stays at this process's.
func TestLowerRunsTheCommandBelow(t *testing.T) {
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0) // 20 - this process's niceness
	if err != nil {
		t.Fatal(err)
	}
	mine := 20 - prio
	cmd, err := Command(context.Background(), "sh", "-c", `cut -d' ' -f19 /proc/$$/stat & wait; cut -d' ' -f19 /proc/$PPID/stat`)
	if err != nil {
		t.Fatal(err)
	}
	Lower(cmd, 5)
	out, err := cmd.Output()
	if want := fmt.Sprintf("%d\n%d\n", min(mine+5, 19), mine); err != nil || string(out) != want {
		t.Fatalf("niceness of the command's child and of the shim: %q, %v; want %q", out, err, want)
	}
}
