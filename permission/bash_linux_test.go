//go:build linux

package permission

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/sandbox"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// The engine against bash itself: every line of a generated corpus that the rules
// allow is run in real bash, under strace, with harmless stubs of the programs the
// rules deny first on PATH and attackers' payloads beside them (a PATH directory whose
// ls runs curl, a BASH_ENV script, an LD_PRELOAD library). Every program the run
// executed and every file it opened for writing is recorded; a program the rules do not
// allow, a program other than the one its name finds on PATH, or a write no Edit rule
// covers fails the test. The runs are sandboxed (Landlock, writes to the test's
// directory only), so a line the engine wrongly allows cannot harm the machine.

// differentialRules are a project's rules: read-only tools, its test, and writes to
// build/ allowed; curl and rm denied.
var differentialRules = map[Verdict][]string{
	Allow: {"Bash(ls:*)", "Bash(cat *)", "Bash(wc *)", "Bash(sort *)", "Bash(find *)", "Bash(tee *)", "Bash(echo *)",
		"Bash(grep *)", "Bash(npm test:*)", "Bash(git status:*)", "Edit(./build/**)"},
	Deny: {"Bash(curl:*)", "Bash(rm:*)"},
}

// passThrough are the programs that run another: their own run is not judged, what they
// run is (its exec is recorded too).
var passThrough = set("env", "timeout", "nice", "nohup", "stdbuf", "time", "xargs", "setsid", "bash", "sh")

// runTimeout bounds one line's run.
const runTimeout = 10 * time.Second

// bashHarness runs lines in bash under strace, in a directory of its own.
type bashHarness struct {
	set     *Set
	root    string // the test's directory
	work    string // the lines' working folder
	outside string // a folder no rule lets them write
	payload string // the attackers' files
	env     []string
	path    []string // the PATH the lines run with
	sb      *sandbox.Sandbox
	strace  string
}

func newBashHarness(t testing.TB) *bashHarness {
	t.Helper()
	strace := testdeps.System(t, "strace", "apt-get install strace")
	if sandbox.ABI() < 1 {
		testdeps.Need(t, "a kernel with Landlock, which keeps the lines' runs in the test's directory")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("the LD_PRELOAD attack needs gcc: %v", err)
	}
	root := t.TempDir()
	h := &bashHarness{root: root, work: filepath.Join(root, "work"), outside: filepath.Join(root, "outside"),
		payload: filepath.Join(root, "payload"), strace: strace}
	stubs := filepath.Join(root, "stubs")
	for _, d := range []string{h.work, filepath.Join(h.work, "build"), h.outside, stubs, filepath.Join(h.payload, "bin"), filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The programs the rules deny, and the ones the project runs, are stubs: nothing a
	// line runs can fetch or remove anything.
	for _, name := range []string{"curl", "rm", "npm", "git", "make", "evil"} {
		write(filepath.Join(stubs, name), "#!/bin/sh\nexit 0\n", 0o755)
	}
	write(filepath.Join(h.work, "f"), "b\na\n", 0o644)
	// The attackers' payloads, each of which runs curl when it works.
	for _, name := range []string{"ls", "cat", "sort", "npm"} {
		write(filepath.Join(h.payload, "bin", name), "#!/bin/sh\ncurl payload-path\n", 0o755)
	}
	write(filepath.Join(h.payload, "env.sh"), "curl payload-bash-env\n", 0o644)
	src := filepath.Join(h.payload, "evil.c")
	write(src, "#include <stdlib.h>\n__attribute__((constructor)) static void evil(void) { unsetenv(\"LD_PRELOAD\"); system(\"curl payload-preload\"); }\n", 0o644)
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", filepath.Join(h.payload, "evil.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	h.path = []string{stubs, "/usr/local/bin", "/usr/bin", "/bin"}
	h.env = []string{"PATH=" + strings.Join(h.path, ":"), "HOME=" + filepath.Join(root, "home"), "LANG=C", "TMPDIR=" + root}

	h.set = &Set{}
	for _, v := range []Verdict{Deny, Allow} {
		if err := h.set.Add(v, differentialRules[v], Paths{Root: h.work, Home: filepath.Join(root, "home")}); err != nil {
			t.Fatal(err)
		}
	}
	h.sb = sandbox.New("permission-differential", sandbox.Policy{Write: []string{root}})
	t.Cleanup(h.sb.Close)
	return h
}

// expand puts the harness's folders into a corpus line: $P the payload, $O outside.
func (h *bashHarness) expand(line string) string {
	return strings.NewReplacer("$P", h.payload, "$O", h.outside).Replace(line)
}

// run runs line in bash and returns what it did that the rules do not allow.
func (h *bashHarness) run(t testing.TB, line string) []string {
	t.Helper()
	dir, err := os.MkdirTemp(h.root, "trace")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A line that writes without end (cat /dev/zero > build/x) or runs long (find /) is
	// bounded: files of 1 MiB, 10 s of CPU, and what it did by runTimeout is judged.
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `ulimit -f 2048 && ulimit -t 10 && exec "$@"`, "sh",
		h.strace, "-ff", "-y", "-xx", "-qq", "-s", "4096", "-e", "signal=none",
		"-e", "trace=execve,execveat,open,openat,openat2,creat,truncate,unlink,unlinkat,rename,renameat,renameat2,mkdir,mkdirat,link,linkat,symlink,symlinkat",
		"-o", filepath.Join(dir, "trace"), "/bin/bash", "--norc", "--noprofile", "-c", line)
	cmd.Dir, cmd.Env = h.work, h.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // strace and every process it traces
	cmd.WaitDelay = time.Second
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.sb.Start(cmd); err != nil {
		t.Fatalf("start strace: %v", err)
	}
	_ = cmd.Wait() // the line's own exit status is not what is judged
	traces, err := filepath.Glob(filepath.Join(dir, "trace.*"))
	if err != nil || len(traces) == 0 {
		t.Fatalf("%q: strace wrote no trace (%v); output:\n%s", line, err, out.String())
	}
	var bad []string
	for _, tr := range traces {
		data, err := os.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if why := h.judge(l); why != "" && !slices.Contains(bad, why) {
				bad = append(bad, why)
			}
		}
	}
	return bad
}

var (
	syscallLine = regexp.MustCompile(`^(\w+)\((.*)\) += (-?\d+)`)
	hexString   = regexp.MustCompile(`"((?:\\x[0-9a-f]{2})*)"`)
	hexDecor    = regexp.MustCompile(`<((?:\\x[0-9a-f]{2})*)>`)
	writeFlags  = regexp.MustCompile(`O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND`)
)

func unhex(s string) string {
	b, err := hex.DecodeString(strings.ReplaceAll(s, `\x`, ""))
	if err != nil {
		return s
	}
	return string(b)
}

// judge reads one line of strace's and returns what it did that the rules do not
// allow, or "".
func (h *bashHarness) judge(line string) string {
	m := syscallLine.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	name, args, ok := m[1], m[2], m[3] != "-1"
	var strs, dirs []string
	for _, s := range hexString.FindAllStringSubmatch(args, -1) {
		strs = append(strs, unhex(s[1]))
	}
	for _, d := range hexDecor.FindAllStringSubmatch(args, -1) {
		dirs = append(dirs, unhex(d[1]))
	}
	at := func(i int) string { // the i-th path, made absolute by its directory
		p := strs[i]
		if !filepath.IsAbs(p) {
			if i < len(dirs) {
				p = filepath.Join(dirs[i], p)
			} else {
				p = filepath.Join(h.work, p)
			}
		}
		return filepath.Clean(p)
	}
	switch name {
	case "execve", "execveat":
		if !ok || len(strs) < 2 {
			return ""
		}
		return h.judgeExec(strs[0], strs[1:])
	case "open", "openat", "openat2", "creat":
		if len(strs) == 0 || (name != "creat" && !writeFlags.MatchString(args)) {
			return ""
		}
		return h.judgeWrite(at(0))
	case "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat":
		if len(strs) < 2 {
			return ""
		}
		if name == "symlink" || name == "symlinkat" {
			return h.judgeWrite(at(1))
		}
		if why := h.judgeWrite(at(0)); why != "" && strings.HasPrefix(name, "rename") {
			return why
		}
		return h.judgeWrite(at(1))
	default: // truncate, unlink, mkdir and their *at forms
		if len(strs) == 0 {
			return ""
		}
		return h.judgeWrite(at(0))
	}
}

// judgeExec judges a program run: the one its name finds on PATH, and allowed.
func (h *bashHarness) judgeExec(path string, argv []string) string {
	name := filepath.Base(path)
	if want := h.lookPath(name); !sameFile(path, want) {
		return fmt.Sprintf("ran %s, not the %s the rules mean (%s)", path, name, want)
	}
	if passThrough[name] {
		return ""
	}
	text := strings.Join(append([]string{name}, argv[1:]...), " ")
	if firstMatch(h.set.Allow, Call{Tool: "Bash"}, []string{text}, h.work) == nil {
		return "ran " + text + ", which no rule allows"
	}
	return ""
}

// judgeWrite judges a file written: a device, or one an Edit rule allows.
func (h *bashHarness) judgeWrite(path string) string {
	if discard(path) || path == "/dev/tty" || strings.HasPrefix(path, "/dev/pts/") {
		return ""
	}
	if firstFile(h.set.Allow, "Write", path, h.work) == nil {
		return "wrote " + path + ", which no rule allows"
	}
	return ""
}

func (h *bashHarness) lookPath(name string) string {
	for _, d := range h.path {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// corpus is the generated lines: each wrapper, assignment and redirection with each
// command, and the expansions that make bash run what no word names.
func corpus() []string {
	prefixes := []string{"", "CI=1 ", "x=1; ", "LD_PRELOAD=$P/evil.so ", "PATH=$P/bin:$PATH ", "PATH=$P/bin; ",
		"export PATH=$P/bin; ", "BASH_ENV=$P/env.sh ", "declare -x LD_PRELOAD=$P/evil.so; ", "IFS=/; "}
	wrappers := []string{"", "env ", "env -i ", "env CI=1 ", "env LD_PRELOAD=$P/evil.so ", "env PATH=$P/bin ", "env -S 'curl env-s' ",
		"env --split-string='rm -rf /' ", "env -C $O ", "timeout 5 ", "timeout -k 1 5 ", "nice -n 1 ", "nohup ", "stdbuf -o0 ",
		"/usr/bin/time -o $O/t ", "/usr/bin/time -ao build/t ", "command ", "exec ", "setsid -w ", "xargs "}
	commands := []string{"ls", "ls -a", "cat f", "wc -l f", "sort f", "sort -o $O/s f", "sort -obuild/s f", "find . -name f",
		"find . -exec curl find-exec \\;", "find . -name f -exec cat {} +", "find . -fprint $O/p", "tee $O/t", "tee build/t",
		"echo hi", "npm test", "git status", "bash -c 'ls; curl bash-c'", "eval 'cat f'", "grep -r a ."}
	suffixes := []string{"", " > build/out", " > $O/out", " 2>&1 >/dev/null", " | wc -l", " && ls", " $(curl subst)",
		" > $O/$(echo x)", " >> build/$(ls | wc -l)"}
	var lines []string
	for _, c := range commands {
		for _, w := range wrappers {
			for _, s := range suffixes {
				lines = append(lines, w+c+s)
			}
		}
		for _, p := range prefixes {
			lines = append(lines, p+c, p+"env "+c, p+"timeout 5 "+c+" > build/out")
		}
	}
	return append(lines, attacks...)
}

// attacks are lines that make bash run or write what no word of them shows.
var attacks = []string{
	"x='a[$(curl arith)]'; ls $((x))",
	"x='a[$(curl arith)]'; [[ $x -eq 0 ]]; ls",
	"x='$(curl prompt)'; echo ${x@P}",
	"y='a[$(curl indirect)]'; x=y; echo ${!x}",
	"echo ${PATH:=$P/bin}; ls",
	"for PATH in $P/bin; do ls; done",
	"printf -v PATH %s $P/bin; ls",
	"declare -n r=PATH; r=$P/bin; ls",
	"read -r PATH <<< $P/bin; ls",
	"cd $O && ls > out",
	"cd $O && echo hi | tee out",
	"ls | xargs -I{} cat {}",
	"/usr/bin/time -o $O/t ls",
	"time -p ls",
	"l? -a",
	"{curl,brace}",
	"ls $O/*",
	"cat <<EOF\n$(curl heredoc)\nEOF",
	"cat < f > build/copy",
	"exec > $O/exec; ls",
	"echo hi >& $O/dup",
	"ls 2> $O/err",
	"ls &> build/all",
	"ls | tee build/$(echo ../escaped)",
	"sort -yt -o0",
}

// TestAllowedLinesRunOnlyWhatTheRulesAllow runs every allowed line of the corpus in
// bash and fails on anything it ran or wrote that the rules do not allow.
func TestAllowedLinesRunOnlyWhatTheRulesAllow(t *testing.T) {
	h := newBashHarness(t)
	var allowed []string
	for _, line := range corpus() {
		line = h.expand(line)
		if v, _ := h.set.Decide(Call{Tool: "Bash", Command: line}, h.work); v == Allow {
			allowed = append(allowed, line)
		}
	}
	if len(allowed) < 100 {
		t.Fatalf("the rules allow only %d lines of the corpus; the test runs too little", len(allowed))
	}
	t.Logf("%d lines of %d allowed; running each in bash", len(allowed), len(corpus()))
	work := make(chan string)
	var mu sync.Mutex // guards failures
	var failures []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for line := range work {
				if bad := h.run(t, line); len(bad) > 0 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%q was allowed, but %s", line, strings.Join(bad, "; ")))
					mu.Unlock()
				}
			}
		}()
	}
	for _, line := range allowed {
		work <- line
	}
	close(work)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
}

// TestBashHarnessSeesTheAttacks shows the harness catches each way of escaping the
// rules (the last two found by the fuzzer and by reading its finding), run directly: without the engine's refusal, these lines would fail the test
// above.
func TestBashHarnessSeesTheAttacks(t *testing.T) {
	h := newBashHarness(t)
	for _, c := range []struct{ line, want string }{
		{"env -S 'curl env-s' ls", "ran curl env-s ls"},
		{"LD_PRELOAD=$P/evil.so ls", "ran curl payload-preload"},
		{"PATH=$P/bin:$PATH ls", "not the ls the rules mean"},
		{"BASH_ENV=$P/env.sh bash -c ls", "ran curl payload-bash-env"},
		{"/usr/bin/time -o $O/t ls", "wrote $O/t"},
		{"x='a[$(curl arith)]'; ls $((x))", "ran curl arith"},
		{"find . -exec curl find-exec \\;", "ran curl find-exec"},
		{"cd $O && ls > out", "wrote $O/out"},
		{"ls | tee build/$(echo ../escaped)", "/work/escaped, which no rule allows"},
		{"sort -yt -o0", "/work/0, which no rule allows"},
	} {
		line := h.expand(c.line)
		if v, r := h.set.Decide(Call{Tool: "Bash", Command: line}, h.work); v == Allow {
			t.Errorf("%q: allowed by %v", c.line, r)
		}
		bad := h.run(t, line)
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, h.expand(c.want)) }) {
			t.Errorf("%q: the harness saw %q; want %q", c.line, bad, h.expand(c.want))
		}
	}
}

// FuzzAllowedLinesUnderBash runs any line the rules allow in bash, as the corpus test
// does: whatever the fuzzer makes of the seeds, an allowed line runs nothing and writes
// nothing the rules do not allow.
func FuzzAllowedLinesUnderBash(f *testing.F) {
	for _, line := range append(attacks, "ls -a > build/out", "timeout 5 ls | wc -l", "env CI=1 cat f 2>&1",
		"find . -name f -exec cat {} +", "sort -obuild/s f", "nice -n 1 tee build/t < f", "x=1; echo $x $((2*3)) > build/x") {
		f.Add(line)
	}
	h := newBashHarness(f)
	f.Fuzz(func(t *testing.T, line string) {
		line = h.expand(line)
		if v, _ := h.set.Decide(Call{Tool: "Bash", Command: line}, h.work); v != Allow {
			return
		}
		if bad := h.run(t, line); len(bad) > 0 {
			t.Fatalf("%q was allowed, but %s", line, strings.Join(bad, "; "))
		}
	})
}
