package deploy

import (
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/internal/testdeps"
)

// nonroot is the user of distroless's nonroot images.
const nonroot = 65532

// dockerfile parses the repository's Dockerfile with Docker's own parser and its build
// checks (what `docker build --check` reports), failing on any warning.
func dockerfile(t *testing.T) (map[string]*instructions.Stage, []string, []instructions.ArgCommand) {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		t.Errorf("Dockerfile:%d: %s: %s", line, rule, msg)
	}})
	stages, args, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	byName := map[string]*instructions.Stage{}
	var order []string
	for i := range stages {
		byName[stages[i].Name] = &stages[i]
		order = append(order, stages[i].Name)
	}
	return byName, order, args
}

// commands returns a stage's commands of type T.
func commands[T instructions.Command](s *instructions.Stage) []T {
	var out []T
	for _, c := range s.Commands {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestDockerfile: the image is built the way the README promises. The default target is
// distroless and runs as the nonroot user; the agents target runs as node and carries the
// agent CLIs at the versions CI tests; both start `agentmux up` in exec form; the Go
// version is go.mod's.
func TestDockerfile(t *testing.T) {
	stages, order, args := dockerfile(t)
	if !slices.Equal(order, []string{"build", "agents", "runtime"}) {
		t.Fatalf("stages %v; want build, agents and runtime (the default, last)", order)
	}
	goMod := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(read(t, "../go.mod"))
	if len(args) != 1 || args[0].Args[0].Key != "GO_VERSION" || args[0].Args[0].Value == nil || *args[0].Args[0].Value != goMod[1] {
		t.Errorf("ARG GO_VERSION should default to go.mod's go %s: %+v", goMod[1], args)
	}
	if base := stages["runtime"].BaseName; !strings.HasPrefix(base, "gcr.io/distroless/static-debian12:nonroot") {
		t.Errorf("the default image is FROM %s; want distroless static nonroot", base)
	}
	for name, user := range map[string]string{"runtime": fmt.Sprintf("%d:%d", nonroot, nonroot), "agents": "node"} {
		s := stages[name]
		users := commands[*instructions.UserCommand](s)
		if len(users) == 0 || users[len(users)-1].User != user {
			t.Errorf("stage %s: last USER %v; want %s", name, users, user)
		}
		entry := commands[*instructions.EntrypointCommand](s)
		cmd := commands[*instructions.CmdCommand](s)
		if len(entry) != 1 || entry[0].PrependShell || !slices.Equal(entry[0].CmdLine, []string{"/usr/local/bin/agentmux"}) ||
			len(cmd) != 1 || cmd[0].PrependShell || !slices.Equal(cmd[0].CmdLine, imageCommand[1:]) {
			t.Errorf("stage %s: ENTRYPOINT %v CMD %v; want %q in exec form", name, entry, cmd, imageCommand)
		}
	}
	// The agent CLIs are the ones .ci/run installs for the tests.
	pinned := regexp.MustCompile(`@(?:anthropic-ai|agentclientprotocol|openai)/[a-z-]+@[0-9.]+`)
	var npm []string
	for _, run := range commands[*instructions.RunCommand](stages["agents"]) {
		npm = append(npm, pinned.FindAllString(strings.Join(run.CmdLine, " "), -1)...)
	}
	ci := pinned.FindAllString(read(t, "../.ci/run"), -1)
	slices.Sort(npm)
	slices.Sort(ci)
	if len(npm) == 0 || !slices.Equal(npm, ci) {
		t.Errorf("the agents image installs %v; CI tests %v", npm, ci)
	}
}

// imageCommand is what both images run: ENTRYPOINT and CMD.
// What a release build stamps into the image (docker build --build-arg).
const stampedVersion, stampedRevision = "v0.9.0-test", "0123456789abcdef0123456789abcdef01234567"

var imageCommand = []string{"/usr/local/bin/agentmux", "up", "-c", "/etc/agentmux/agentmux.toml"}

// TestImageRootfs builds the binaries as the Dockerfile's build stage does (its own RUN
// lines, with /out a temporary folder) and runs the default image's command as the
// nonroot user in a root holding nothing but what the image copies in: the binary is
// static, a supervisor node with its embedded NATS server comes up and answers /readyz,
// the CLI in the image talks to it, and a node that would start agents refuses, saying
// why (distroless has no shell for the process shim).
func TestImageRootfs(t *testing.T) {
	testdeps.Root(t, "to chroot into the image's root")
	stages, _, _ := dockerfile(t)
	build := stages["build"]
	var imageEnv []string // what the image's ENV lines set
	for _, e := range commands[*instructions.EnvCommand](stages["runtime"]) {
		for _, kv := range e.Env {
			imageEnv = append(imageEnv, kv.Key+"="+kv.Value)
		}
	}
	out := t.TempDir()
	env := os.Environ()
	for _, e := range commands[*instructions.EnvCommand](build) {
		for _, kv := range e.Env {
			env = append(env, kv.Key+"="+kv.Value)
		}
	}
	built := 0
	for _, run := range commands[*instructions.RunCommand](build) {
		line := strings.Join(run.CmdLine, " ")
		if !strings.HasPrefix(line, "go build") {
			continue
		}
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(line, "/out/", out+"/"))
		// The release's stamp, as docker build --build-arg VERSION=… REVISION=… gives it.
		cmd.Dir, cmd.Env = "..", append(env, "VERSION="+stampedVersion, "REVISION="+stampedRevision)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
		built++
	}
	if built != 2 {
		t.Fatalf("the build stage has %d go build lines; want agentmux and loadgen", built)
	}
	binary := filepath.Join(out, "agentmux")
	checkStatic(t, binary)

	root := t.TempDir()
	for _, dir := range []string{"usr/local/bin", "var/lib/agentmux", "etc/agentmux", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, mode := range map[string]os.FileMode{"": 0o755, "tmp": 0o1777} {
		if err := os.Chmod(filepath.Join(root, path), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(root, "var/lib/agentmux"), nonroot, nonroot); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/local/bin/agentmux"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	natsPort, metricsPort := proctest.FreePort(t), proctest.FreePort(t)
	manifest := filepath.Join(root, "etc/agentmux/agentmux.toml")
	write(t, manifest, fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = "/var/lib/agentmux/nats"
[metrics]
addr = "127.0.0.1:%d"
[supervisors.policy]
strategy = "rule"
rules = [{ type = "approval", match = "rm -rf", answer = "no" }]
`, natsPort, metricsPort))

	up := inImage(root, imageEnv, imageCommand...)
	var stderr proctest.Buffer // read while the node writes it
	up.Stderr = &stderr
	up.WaitDelay = 10 * time.Second
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = up.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = up.Process.Kill()
		<-exited
	})
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", metricsPort)
	proctest.Within(t, time.Minute, func() error {
		select {
		case <-exited:
			t.Fatalf("agentmux up exited in the image's root: %v\n%s", exitErr, stderr.String())
		default:
		}
		resp, err := http.Get(ready)
		if err != nil {
			return fmt.Errorf("/readyz not 200 within a minute of agentmux up in the image's root: %w\n%s", err, stderr.String())
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %s, not 200, a minute after agentmux up in the image's root:\n%s", resp.Status, stderr.String())
		}
		return nil
	})
	cli := inImage(root, imageEnv, "/usr/local/bin/agentmux", "nodes", "-c", "/etc/agentmux/agentmux.toml")
	if b, err := cli.CombinedOutput(); err != nil || !strings.Contains(string(b), "policy") || !strings.Contains(string(b), stampedVersion) {
		t.Errorf("agentmux nodes in the image: %v; want the node, running the stamped %s\n%s", err, stampedVersion, b)
	}
	version := inImage(root, imageEnv, "/usr/local/bin/agentmux", "version")
	if b, err := version.CombinedOutput(); err != nil || !strings.Contains(string(b), stampedVersion) || !strings.Contains(string(b), "revision "+stampedRevision) {
		t.Errorf("agentmux version in the image: %v\n%s; want the stamped version %s and revision %s", err, b, stampedVersion, stampedRevision)
	}
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("agentmux up exited %v on SIGTERM:\n%s", exitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agentmux up did not stop within 30 s of SIGTERM:\n%s", stderr.String())
	}
	if entries, err := os.ReadDir(filepath.Join(root, "var/lib/agentmux/nats")); err != nil || len(entries) == 0 {
		t.Errorf("the embedded server kept nothing in /var/lib/agentmux/nats: %v", err)
	}

	// A node that would start agents needs /bin/sh, which the image does not have.
	write(t, manifest, fmt.Sprintf("[nats]\nlisten = \"127.0.0.1:%d\"\nstore_dir = \"/var/lib/agentmux/nats\"\n[metrics]\naddr = \"127.0.0.1:0\"\n[hosts.coder]\ncommand = \"/usr/local/bin/runtime\"\n", natsPort))
	agents := inImage(root, imageEnv, imageCommand...)
	b, err := agents.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "this system has none") || !strings.Contains(string(b), "agents target") {
		t.Errorf("a node with hosts in the distroless image: %v\n%s", err, b)
	}
}

// inImage is a command run as the image's user in root.
func inImage(root string, env []string, argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"HOME=/home/nonroot", "PATH=/usr/local/bin"}, env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: nonroot, Gid: nonroot}}
	return cmd
}

// checkStatic fails unless path is an executable with no dynamic loader and no shared
// libraries: it runs in an image with no libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (%v); the distroless static image has no libc", path, p.Type)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
