//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/shim"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// fixture is a node's files as a sandboxed agent finds them.
type fixture struct {
	state, cred, work, outside, manifest string
	bus, open                            net.Listener
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if abi := sandbox.ABI(); abi < 6 {
		t.Fatalf("this kernel offers Landlock ABI %d; these tests need 6 (Linux 6.12) to try every escape", abi)
	}
	root := t.TempDir()
	f := &fixture{
		state:    filepath.Join(root, "state"),
		work:     filepath.Join(root, "work"),
		outside:  filepath.Join(root, "outside"),
		manifest: filepath.Join(root, "agentmux.toml"),
	}
	f.cred = filepath.Join(f.state, "operator-4222.nk")
	for _, d := range []string{f.state, f.work, f.outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{f.cred: "SUAxxxx", f.manifest: "[hosts.a]\n", filepath.Join(f.work, "notes"): "n\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []*net.Listener{&f.bus, &f.open} {
		var err error
		if *l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*l).Close() })
		go accept(*l)
	}
	return f
}

func accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

func port(l net.Listener) uint16 { return uint16(l.Addr().(*net.TCPAddr).Port) }

func (f *fixture) policy() sandbox.Policy {
	return sandbox.Policy{Write: []string{f.work}, ReadDeny: []string{f.state}, WriteDeny: []string{f.manifest},
		ConnectDeny: []uint16{port(f.bus)}, Temp: true}
}

// run runs script under sh in sb, in the work directory, and returns its output and
// whether it exited 0.
func (f *fixture) run(t *testing.T, sb *sandbox.Sandbox, script string) (string, bool) {
	t.Helper()
	cmd, err := shim.Command(context.Background(), "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = f.work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=/tmp"}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := sb.Start(cmd); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%q: %v", script, err)
	}
	return out.String(), err == nil
}

// trace is a script that attaches to pid with ptrace and exits 0 if it could.
func trace(pid string) string {
	return `python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).ptrace(16, ` + pid + `, 0, 0) != 0)'`
}

// connect is a script that connects to 127.0.0.1:port and exits 0 if it could.
func connect(p uint16) string {
	return fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), 5).close()'`, p)
}

// TestSandboxRefusesEveryEscape plays an agent trying each way out of its sandbox, and
// checks that what it must be able to do still works.
func TestSandboxRefusesEveryEscape(t *testing.T) {
	f := newFixture(t)
	sb := sandbox.New("hosts.attacker", f.policy())
	t.Cleanup(sb.Close)
	me := strconv.Itoa(os.Getpid())
	for _, c := range []struct {
		what, script string
		allowed      bool
	}{
		{"read the node's credential", "cat " + f.cred, false},
		{"read it through a link it makes", "ln -s " + f.cred + " link && cat link", false},
		{"hard-link it into the work directory", "ln " + f.cred + " hard && cat hard", false},
		{"write into the state directory", "echo x > " + f.state + "/planted", false},
		{"remove the credential", "rm -f " + f.cred, false},
		{"trace the node", trace(me), false},
		{"read the node's files through /proc", "cat /proc/" + me + "/root" + f.cred, false},
		{"follow the node's working directory", "ls /proc/" + me + "/cwd/", false},
		{"signal the node", "kill -CONT " + me, false},
		{"connect to the node's bus port", connect(port(f.bus)), false},
		{"write outside its directories", "echo x > " + f.outside + "/f", false},
		{"move a file out of the work directory", "mv notes " + f.outside + "/", false},
		{"rewrite the manifest", "echo '[routes]' >> " + f.manifest, false},
		{"replace the manifest", "rm -f " + f.manifest, false},
		{"write /tmp itself", "echo x > /tmp/agentmux-sandbox-test-$$", false},
		{"leave a file in /dev/shm, shared and counted nowhere", "echo x > /dev/shm/agentmux-sandbox-test-$$", false},

		{"read the manifest", "cat " + f.manifest, true},
		{"read the system", "cat /etc/passwd >/dev/null && ls / >/dev/null", true},
		{"write, rename and remove in its work directory", "mkdir -p d && echo x > d/f && mv d/f g && rm g && rmdir d", true},
		{"link and rename across its own directories (git does, with no fallback)", `mkdir -p d2 && echo x > d2/f && ln d2/f h && python3 -c 'import os; os.rename("d2/f", "r")' && rm h r && rmdir d2`, true},
		{"write its own temporary directory", `test "$TMPDIR" != /tmp && f=$(mktemp) && echo x > "$f" && rm "$f"`, true},
		{"write the devices", "echo x > /dev/null && head -c1 /dev/urandom >/dev/null", true},
		{"connect to any other port", connect(port(f.open)), true},
		{"start processes and signal its own", "sleep 30 & kill $! && wait $! ; true", true},
	} {
		out, ok := f.run(t, sb, c.script)
		if ok != c.allowed {
			t.Errorf("%s (%s): exit 0 is %v, want %v; output:\n%s", c.what, c.script, ok, c.allowed, out)
		}
	}
	if b, err := os.ReadFile(f.cred); err != nil || string(b) != "SUAxxxx" {
		t.Errorf("the credential is %q, %v after the attempts", b, err)
	}
	if b, _ := os.ReadFile(f.manifest); string(b) != "[hosts.a]\n" {
		t.Errorf("the manifest is %q after the attempts", b)
	}
}

// TestSandboxRefusesAPortAnnouncedAfterItWasBuilt plays an agentmux process started
// after a node's sandbox was built, on a port the node never knew (a console on
// --addr 127.0.0.1:N): the programs the sandbox starts from then on cannot reach it, and
// can again once it is gone.
func TestSandboxRefusesAPortAnnouncedAfterItWasBuilt(t *testing.T) {
	f := newFixture(t)
	sb := sandbox.New("hosts.attacker", f.policy())
	t.Cleanup(sb.Close)
	later := port(f.open)
	if out, ok := f.run(t, sb, connect(later)); !ok {
		t.Fatalf("before it was announced, port %d was refused:\n%s", later, out)
	}
	release, err := sandbox.Announce(later)
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := f.run(t, sb, connect(later)); ok {
		t.Errorf("an agent started after port %d was announced reached it:\n%s", later, out)
	}
	if out, ok := f.run(t, sb, connect(port(f.bus))); ok {
		t.Errorf("the rebuilt sandbox let an agent reach the node's own port:\n%s", out)
	}
	release()
	if out, ok := f.run(t, sb, connect(later)); !ok {
		t.Errorf("once released, port %d is still refused:\n%s", later, out)
	}
}

// TestSandboxOfARootNodeShedsRoot plays an agent of a node run as root: with no user it
// is root without a capability, and cannot read another user's 0600 file or regain a
// capability; a program given a user runs as it, its TMPDIR its own.
func TestSandboxOfARootNodeShedsRoot(t *testing.T) {
	testdeps.Root(t, "to play a node run as root")
	f := newFixture(t)
	secret := filepath.Join(f.outside, "theirs")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	caps := `grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status && grep -q '^CapPrm:[[:space:]]*0*$' /proc/self/status`
	for _, c := range []struct {
		what   string
		policy func(*sandbox.Policy)
		script string
		ok     bool
	}{
		{"run with no capability", nil, caps, true},
		{"read another user's 0600 file", nil, "cat " + secret, false},
		{"regain capabilities through a root exec", nil, `exec sh -c "` + caps + `"`, true},
		{"write its own files as root", nil, "echo x > mine && test -O mine", true},
		{"run as its user", func(p *sandbox.Policy) { p.As = &sandbox.User{Name: "nobody", Uid: 65534, Gid: 65534} },
			`test "$(id -u):$(id -g)" = 65534:65534 && echo x > "$TMPDIR/t" && cat ` + secret, true},
	} {
		p := f.policy()
		if c.policy != nil {
			c.policy(&p)
		}
		if p.As != nil { // the test's directories are root's, 0700
			for _, d := range []string{filepath.Dir(filepath.Dir(f.work)), filepath.Dir(f.work), f.outside} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(f.work, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		sb := sandbox.New("hosts.root", p)
		out, ok := f.run(t, sb, c.script)
		sb.Close()
		if ok != c.ok {
			t.Errorf("%s (%s): exit 0 is %v, want %v; output:\n%s", c.what, c.script, ok, c.ok, out)
		}
	}
}

// TestProgramsStartedWhilePortsChangeRunToTheirEnd starts programs at once while ports
// are announced and released, each change a new build: a build is retired only once
// nothing it started or is starting runs, so none is killed by its thread's end.
func TestProgramsStartedWhilePortsChangeRunToTheirEnd(t *testing.T) {
	sb := sandbox.New("hosts.churn", sandbox.Policy{Write: []string{t.TempDir()}, ConnectDeny: []uint16{4222}})
	defer sb.Close()
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for port := uint16(30001); ; port++ {
			select {
			case <-stop:
				return
			default:
			}
			if release, err := sandbox.Announce(port); err == nil {
				release()
			}
		}
	}()
	const n = 12
	errs := make(chan error, n)
	for range n {
		go func() {
			cmd, err := shim.Command(context.Background(), "sleep", "0.3") // killed if its thread ends
			if err != nil {
				errs <- err
				return
			}
			if err := sb.Start(cmd); err != nil {
				errs <- err
				return
			}
			errs <- cmd.Wait()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a program started while the ports changed: %v", err)
		}
	}
	close(stop)
	<-churned
}

// TestSandboxLeavesTheNodeAlone checks that only the programs are restricted: the
// process that started them still writes where they may not, on every thread.
func TestSandboxLeavesTheNodeAlone(t *testing.T) {
	f := newFixture(t)
	sb := sandbox.New("hosts.a", f.policy())
	t.Cleanup(sb.Close)
	if _, ok := f.run(t, sb, "true"); !ok {
		t.Fatal("a sandboxed true failed")
	}
	done := make(chan error, 64)
	for i := range cap(done) {
		go func() {
			path := filepath.Join(f.outside, strconv.Itoa(i))
			if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
				done <- err
				return
			}
			_, err := os.ReadFile(f.cred)
			done <- err
		}()
	}
	for range cap(done) {
		if err := <-done; err != nil {
			t.Fatalf("the node itself was restricted: %v", err)
		}
	}
	c, err := net.Dial("tcp", f.bus.Addr().String())
	if err != nil {
		t.Fatalf("the node itself cannot connect to its bus: %v", err)
	}
	c.Close()
}

// TestSandboxCloseTakesItsProgramsDown checks the parent-death signal: the programs'
// parent is the sandbox's thread, which Close ends.
func TestSandboxCloseTakesItsProgramsDown(t *testing.T) {
	f := newFixture(t)
	sb := sandbox.New("hosts.a", f.policy())
	cmd, err := shim.Command(context.Background(), "sleep", "300")
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	sb.Close()
	select {
	case err := <-exited:
		if err == nil {
			t.Fatal("sleep 300 exited 0 after Close")
		}
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("a program outlived its sandbox's Close by 10 s")
	}
	if err := sb.Start(exec.Command("true")); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("Start after Close = %v, want ErrClosed", err)
	}
	if _, err := os.Stat(f.work); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxNamesWhatIsMissing checks the error for a writable path that does not
// exist, and that the sandbox is built once it does, without a restart.
func TestSandboxNamesWhatIsMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "later")
	sb := sandbox.New("hosts.a", sandbox.Policy{Write: []string{missing}})
	t.Cleanup(sb.Close)
	err := sb.Start(exec.Command("true"))
	if err == nil || !strings.Contains(err.Error(), "sandbox hosts.a") || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "sandbox_write") {
		t.Fatalf("Start with a missing writable path = %v", err)
	}
	if err := os.Mkdir(missing, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo x > "+missing+"/made")
	if err := sb.Start(cmd); err != nil {
		t.Fatalf("Start once the path exists: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writing the path made since: %v", err)
	}
}

// TestSandboxCarvesADeniedFileOutOfTheWorkDirectory checks a manifest kept in the
// working directory: the agent cannot write it, writes every other file and
// directory there, and cannot create entries next to it (Landlock cannot grant a
// directory but one file in it).
func TestSandboxCarvesADeniedFileOutOfTheWorkDirectory(t *testing.T) {
	f := newFixture(t)
	inside := filepath.Join(f.work, "agentmux.toml")
	if err := os.WriteFile(inside, []byte("[hosts.a]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.work, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := f.policy()
	p.WriteDeny = []string{inside}
	sb := sandbox.New("hosts.a", p)
	t.Cleanup(sb.Close)
	for _, c := range []struct {
		script  string
		allowed bool
	}{
		{"echo '[routes]' >> agentmux.toml", false},
		{"mv agentmux.toml old.toml", false},
		{"echo x > new-at-the-top", false},
		{"cat agentmux.toml && echo more >> notes", true},
		{"echo x > src/new && mkdir src/d && mv src/new src/d/ && rm -r src/d", true},
	} {
		if out, ok := f.run(t, sb, c.script); ok != c.allowed {
			t.Errorf("%s: exit 0 is %v, want %v; output:\n%s", c.script, ok, c.allowed, out)
		}
	}
}

// BenchmarkStart measures what the sandbox adds to starting a program (through the
// shim, as a node does): its thread's hop, and the restricted process's exec. The
// sandbox itself is built before the timer (BenchmarkBuild).
func BenchmarkStart(b *testing.B) {
	for _, boxed := range []bool{false, true} {
		b.Run(map[bool]string{false: "unsandboxed", true: "sandboxed"}[boxed], func(b *testing.B) {
			var sb *sandbox.Sandbox
			if boxed {
				sb = sandbox.New("bench", sandbox.Policy{Write: []string{b.TempDir()}, ReadDeny: []string{b.TempDir()}, ConnectDeny: []uint16{4222}, Temp: true})
				b.Cleanup(sb.Close)
			}
			runTrue(b, sb) // builds the sandbox
			b.ResetTimer()
			for b.Loop() {
				runTrue(b, sb)
			}
		})
	}
}

// BenchmarkBuild measures building a sandbox (its rules, the port rules among them, and
// its thread) and starting its first program.
func BenchmarkBuild(b *testing.B) {
	write, deny := b.TempDir(), b.TempDir()
	for b.Loop() {
		sb := sandbox.New("bench", sandbox.Policy{Write: []string{write}, ReadDeny: []string{deny}, ConnectDeny: []uint16{4222}})
		runTrue(b, sb)
		sb.Close()
	}
}

// runTrue runs true through the shim in sb.
func runTrue(b *testing.B, sb *sandbox.Sandbox) {
	cmd, err := shim.Command(context.Background(), "true")
	if err != nil {
		b.Fatal(err)
	}
	if err := sb.Start(cmd); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// TestGuardTurnsAwayANodesProgram plays a node (this process, which announces a port)
// whose sandboxed program connects to a guarded listener, over IPv4 and IPv6 loopback:
// the program's connection is closed unanswered, and this process's own is served.
func TestGuardTurnsAwayANodesProgram(t *testing.T) {
	f := newFixture(t)
	release, err := sandbox.Announce(port(f.bus))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	for _, network := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", network)
		if err != nil {
			t.Fatal(err)
		}
		guarded := sandbox.Guard(ln)
		go func() {
			for {
				c, err := guarded.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte("served\n"))
				c.Close()
			}
		}()
		addr := ln.Addr().(*net.TCPAddr)
		sb := sandbox.New("hosts.guarded", sandbox.Policy{Write: []string{f.work}, Temp: true})
		read := fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection((%q, %d), 5); print(s.recv(10).decode() or "closed")'`, addr.IP.String(), addr.Port)
		out, _ := f.run(t, sb, read)
		sb.Close()
		if strings.TrimSpace(out) != "closed" && !strings.Contains(out, "Connection reset") {
			t.Errorf("%s: the node's program was answered: %q", network, out)
		}
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 6)
		_, err = io.ReadFull(c, got)
		c.Close()
		if err != nil || string(got) != "served" {
			t.Errorf("%s: this process was not served: %q %v", network, got, err)
		}
		ln.Close()
	}
}
