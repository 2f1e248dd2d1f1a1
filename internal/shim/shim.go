package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// shell runs the shim's script.
const shell = "/bin/sh"

// script is the shim. Its first argument is the cgroup.procs file of the cgroup it
// runs in, or "-"; its second how far below its own priority the command runs (nice
// -n: the command, and all it starts, from its first instruction); its third whether
// it watches its parent itself (1) or the kernel tells it of the parent's death (0);
// the others are the command: they are never interpolated. The command's stdin is the
// shim's (an asynchronous list's would be /dev/null).
//
// Where the system has no parent-death signal (macOS), the shim watches: a background
// loop asks every second whether the parent still exists (kill -0) and, once it does
// not, sends the shim the signal the kernel would have sent. The loop ignores the
// signals the group may be sent, and the shim kills it when the command has ended. A
// parent that died but was not yet reaped (a zombie) still answers kill -0: the group
// dies once the node's own parent (a shell, launchd) has reaped it.
//
// When its parent dies, the shim kills every other process of its cgroup first: one
// that left the group (setsid) is still there. A process may fork meanwhile, so it
// reads the list again until only the shim is left (at most 100 rounds), then kills
// its group, itself included. It signals them itself, from within their sandbox: a
// sandboxed shim may not write cgroup.kill, and may signal only its own sandbox.
//
// SIGTERM and SIGINT, which may be sent to the whole group, must not kill the shim while
// the command runs: the shim would lose the command's exit status and stop guarding the
// group. The shim catches them from its first line; a caught signal goes back to default
// in the command, which acts on it. One that came while the shell was starting, before
// the command, ends the shim by that signal with the command never started. Ignoring
// them instead would be inherited by the command, and the shell cannot start an
// asynchronous list with them reset. (Such a list ignores SIGINT all the same, by POSIX;
// the node stops agents with SIGTERM.)
//
// A caught signal interrupts wait, which then says 128 + the signal, so the shim waits
// again: again for a command still running, or for its status once it has ended; a
// second wait for a command the first one returned answers 127, and the first's status
// stands. The exit status of a command a signal killed is 128 + the signal: the shim
// dies of that signal then, so its parent sees what killed the command. wait's stderr
// is dropped: it carries only the shell's job report ("Killed"), which would read as
// the command's own last line.
const script = `procs=$1
lower=$2
watch=$3
shift 3
reap() {
	[ "$procs" = - ] && return
	n=0
	while [ "$n" -lt 100 ]; do
		others=
		while read -r p; do
			[ "$p" = "$$" ] || others="$others $p"
		done <"$procs"
		[ -z "$others" ] && return
		kill -9 $others 2>/dev/null
		n=$((n + 1))
	done
}
trap 'reap 2>/dev/null; kill -9 0' USR1
[ "$PPID" = 1 ] && { reap 2>/dev/null; kill -9 0; }
watcher=
if [ "$watch" = 1 ]; then
	shim=$$
	parent=$PPID
	{
		trap '' TERM INT
		while kill -0 "$parent" 2>/dev/null; do sleep 1; done
		kill -USR1 "$shim"
	} </dev/null >/dev/null 2>&1 &
	watcher=$!
fi
trap 'sig=TERM' TERM
trap 'sig=INT' INT
exec 3<&0
if [ -n "$sig" ]; then
	trap - TERM INT
	kill -s "$sig" $$
fi
if [ "$lower" -gt 0 ]; then
	nice -n "$lower" "$@" <&3 3<&- &
else
	"$@" <&3 3<&- &
fi
child=$!
exec 3<&-
status=
while :; do
	sig=
	wait "$child" 2>/dev/null
	s=$?
	[ "$s" = 127 ] && [ -n "$status" ] && break
	status=$s
	[ -n "$sig" ] || break
done
[ -n "$watcher" ] && kill -9 "$watcher" 2>/dev/null
if [ "$status" -gt 128 ]; then
	trap - TERM INT
	kill -$((status - 128)) $$
fi
exit "$status"`

// parentDied is the signal the shim gets when its parent dies, from the kernel or from
// its own watch: one nothing else sends to an agent's group (the stop ladder sends
// SIGTERM and SIGKILL).
const parentDied = syscall.SIGUSR1

// Check reports whether the shim can run here: it needs a POSIX shell at /bin/sh.
func Check() error {
	if _, err := os.Stat(shell); err != nil {
		return fmt.Errorf("agents, command supervisors and tools start under %s, which kills their process group when the node dies, and this system has none (%w): run this node from an image with a shell (the Dockerfile's agents target), or leave its hosts and command supervisors to other nodes (--no-hosts, --supervisors)", shell, err)
	}
	return nil
}

// Command returns the command that runs name with args in a process group of its own,
// the whole group killed when ctx ends or this process dies. name is looked up in PATH
// here, as exec.Command does. (Registry.Command runs it in a cgroup of its own too.)
func Command(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	return command(ctx, "-", name, args)
}

// command is Command in the cgroup whose cgroup.procs file is procs ("-": none).
func command(ctx context.Context, procs, name string, args []string) (*exec.Cmd, error) {
	return commandWatching(ctx, procs, !parentDeathSignal, name, args)
}

// commandWatching is command; with watch the shim watches its parent itself, as it
// must where the kernel sends no signal at a parent's death.
func commandWatching(ctx context.Context, procs string, watch bool, name string, args []string) (*exec.Cmd, error) {
	path, err := exec.LookPath(name)
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return nil, err
	}
	watching := "0"
	if watch {
		watching = "1"
	}
	cmd := exec.CommandContext(ctx, shell, append([]string{"-c", script, "agentmux-shim", procs, "0", watching, path}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !watch {
		onParentDeath(cmd.SysProcAttr, parentDied)
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd, nil
}

// argLower is where the shim's second argument, how far below its priority the command
// runs, sits in a Command's Args.
const argLower = 5

// Lower makes a command from Command (not yet started) run nice below this process's
// priority, as nice -n does, capped at the lowest (19): the command from its first
// instruction, and everything it starts. (Lowering a group once it started would miss a
// process forked meanwhile.)
func Lower(cmd *exec.Cmd, nice int) {
	if nice > 0 {
		cmd.Args[argLower] = strconv.Itoa(nice)
	}
}
