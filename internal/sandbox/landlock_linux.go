//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access rights, as Landlock names them.
const (
	readAccess = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix
	// fileAccess are the rights a rule on a file (not a directory) may carry.
	fileAccess = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// Mechanism is how programs are sandboxed here: "landlock", or "" on a kernel without.
func Mechanism() string {
	if ABI() < 1 {
		return ""
	}
	return "landlock"
}

// wrap leaves cmd as it is: the thread that starts it carries the restrictions.
func (d *domain) wrap(*exec.Cmd) {}

// ABI is the Landlock ABI version this kernel offers; 0 without Landlock.
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// restrict builds p's ruleset and starts the thread that enforces it on itself.
func (s *Sandbox) restrict(p Policy) (*domain, error) {
	abi := ABI()
	if abi < 1 {
		return nil, fmt.Errorf("sandbox %s: this kernel has no Landlock (Linux 5.13 or later, with landlock in the lsm= boot parameter); set sandbox = \"none\" to run it unsandboxed", s.name)
	}
	grants, err := p.grants()
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", s.name, err)
	}
	cfg := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}
	writeAccess := landlock.V11.HandledAccessFS
	if abi < 2 {
		// Without the refer right (ABI 2), a rule asking for it turns best effort off.
		writeAccess &^= ll.AccessFSRefer
	}
	// Listing is granted everywhere, denied directories included: their names are not
	// what is kept from the program, their contents are.
	rules := []landlock.Rule{landlock.PathAccess(ll.AccessFSReadDir, "/")}
	for _, g := range grants {
		a := landlock.AccessFSSet(readAccess)
		if g.write {
			a = writeAccess
		}
		if !g.dir {
			a &= fileAccess
		}
		rules = append(rules, landlock.PathAccess(a, g.path).IgnoreIfMissing())
	}
	if len(p.ConnectDeny) > 0 {
		cfg.HandledAccessNet = ll.AccessNetConnectTCP
		for port := 1; port <= 65535; port++ {
			if _, denied := slices.BinarySearch(p.ConnectDeny, uint16(port)); !denied {
				rules = append(rules, landlock.ConnectTCP(uint16(port)))
			}
		}
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: landlock ruleset: %w", s.name, err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("sandbox %s: Landlock ABI %d enforces none of this policy", s.name, abi)
	}
	d := newDomain()
	ready := make(chan error)
	d.shed = os.Geteuid() == 0 && p.As == nil
	go s.thread(fd, flags, d, ready, nil)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("sandbox %s: restricting its thread: %w", s.name, err)
	}
	return d, nil
}

// thread restricts the OS thread it locks, reports on ready, and serves. It never runs
// on the process's first thread, which a signal to the process reaches and Landlock
// scopes it by (a program there could signal the node), and which never ends (so the
// programs' parent-death signal would never come): there it starts itself again and
// holds the first thread until the other goroutine has locked another. locked, if not
// nil, is closed once this goroutine holds its thread.
func (s *Sandbox) thread(fd int, flags uint32, d *domain, ready chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread() // never unlocked once restricted: the thread ends with this goroutine
	if locked != nil {
		close(locked)
	}
	if unix.Gettid() == unix.Getpid() {
		other := make(chan struct{})
		go s.thread(fd, flags, d, ready, other)
		<-other
		runtime.UnlockOSThread()
		return
	}
	var err error
	if d.shed {
		err = shedCapabilities()
	}
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err == nil {
		err = ll.LandlockRestrictSelf(fd, flags)
	}
	unix.Close(fd)
	ready <- err
	if err == nil {
		s.serve(d)
	}
}

// The securebits (linux/securebits.h) that keep a thread run as root, and what it
// executes, from holding capabilities: root gains none by exec, and none of it can be
// changed back.
const (
	secbitNoRoot             = 1 << 0
	secbitNoRootLocked       = 1 << 1
	secbitNoSetuidFixup      = 1 << 2
	secbitNoSetuidFixupLock  = 1 << 3
	secbitKeepCapsLocked     = 1 << 5
	secbitNoAmbientRaise     = 1 << 6
	secbitNoAmbientRaiseLock = 1 << 7
	lockedRootless           = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLock |
		secbitKeepCapsLocked | secbitNoAmbientRaise | secbitNoAmbientRaiseLock
)

// shedCapabilities leaves the calling thread, run as root, without any capability for
// good: its bounding set emptied, exec as root granting none, its ambient, permitted,
// effective and inheritable sets cleared. Capabilities are a thread's: the node's other
// threads keep theirs.
func shedCapabilities() error {
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); errors.Is(err, unix.EINVAL) {
			break // past the kernel's last capability
		} else if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedRootless, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient capabilities: %w", err)
	}
	none := [2]unix.CapUserData{}
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
