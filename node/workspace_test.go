package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// editor is an agent of the native protocol that edits its working directory: it writes
// attempt-<n>.txt there (n: its attempt, from the prompt's previous_attempt), or the
// file a prompt "write NAME" names, and with
// "crash" in its prompt it exits on its first attempt without a result. A prompt
// "escape PATH…" has it try to write each path too (and with "commit" in it, commits
// its work itself with git); "big" has it write a MiB and ask an approval. Its result
// says where it ran, what it found there, which paths it wrote and whether its own
// commit went in.
const editor = `
import json, os, subprocess, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") != "prompt":
        continue
    prev = m.get("previous_attempt")
    n = prev["attempt"] + 1 if prev else 0
    saw = sorted(os.listdir("."))
    name = m["text"].split()[1] if m["text"].startswith("write ") else "attempt-%d.txt" % n
    with open(name, "w") as f:
        f.write(m["session"] + "\n")
    if "crash" in m["text"] and not prev:
        sys.exit(3)
    if m["text"] in ("big", "bigtmp"):
        where = "."
        if m["text"] == "bigtmp":
            where = os.environ["TMPDIR"]
            with open("tmpdir.txt", "w") as f:
                f.write(where)
        with open(os.path.join(where, "big.bin"), "wb") as f:
            f.write(b"x" * (1 << 20))
        print(json.dumps({"type": "approval", "id": "a1", "description": "keep big.bin?"}), flush=True)
        sys.stdin.readline()
    wrote, committed = [], False
    if m["text"].startswith("escape "):
        if "commit" in m["text"].split():
            committed = subprocess.run(["sh", "-c", "git add -A && git -c user.name=agent -c user.email=agent@localhost commit -q -m 'by the agent'"]).returncode == 0
        for path in m["text"].split()[1:]:
            if path == "commit":
                continue
            try:
                with open(path, "w") as f:
                    f.write("planted\n")
                wrote.append(path)
            except OSError:
                pass
    print(json.dumps({"type": "result", "text": json.dumps({"cwd": os.getcwd(), "saw": saw, "wrote": wrote, "committed": committed})}), flush=True)
    break
`

// gitRepo makes a repository with one commit on main, as a person's checkout.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "init", "--quiet", "--initial-branch=main")
	gitOut(t, dir, "add", ".")
	gitOut(t, dir, "commit", "--quiet", "-m", "first")
	return dir
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// editorHost is a host of editor agents in workspaces of mode over repo.
func editorHost(mode, repo, dir, extra string) string {
	return fmt.Sprintf("[hosts.edit]\ncommand = \"python3\"\nargs = [\"-c\", %q]\nworking_dir = %q\nworkspace = %q\nworkspace_dir = %q\nenv = { AGENTMUX_TEST_MARK = \"@MARK@\" }\n%s\n",
		editor, repo, mode, dir, extra)
}

type editorSaw struct {
	Cwd       string   `json:"cwd"`
	Saw       []string `json:"saw"`
	Wrote     []string `json:"wrote"`
	Committed bool     `json:"committed"`
}

func sawOf(t *testing.T, res *agent.Result) editorSaw {
	t.Helper()
	var s editorSaw
	if err := json.Unmarshal([]byte(res.Text), &s); err != nil {
		t.Fatalf("session %s: result %q (%s): %v", res.Session, res.Text, res.Error, err)
	}
	return s
}

// TestTwentySessionsInWorktrees: twenty sessions of one host at once, each in a worktree
// of its own of the repository the host's working_dir is; each writes its own file.
// Every session's branch holds its file alone, its end says so (result, session.ended,
// audit), and the person's checkout is untouched, in its sandbox where there is one.
func TestTwentySessionsInWorktrees(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	refs := gitOut(t, repo, "for-each-ref")
	f := start(t, editorHost("worktree", repo, dir, "pool = 20"))
	ended := collect[wire.SessionEnded](t, f, wire.EventSubject("edit", "*", wire.EventSessionEnded))
	const n = 20
	results := make([]*agent.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := f.n.Run(ctx, "edit", "", "edit")
			if err != nil {
				t.Errorf("session %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	cwds := map[string]bool{}
	for _, res := range results {
		saw, ws := sawOf(t, res), res.Workspace
		if !res.OK || ws == nil || ws.Branch != "agentmux/"+res.Session || ws.Files != 1 || !ws.Committed || ws.Path != "" {
			t.Errorf("session %s: ok %v, workspace %+v; want ok, its branch with one file committed, the worktree removed", res.Session, res.OK, ws)
			continue
		}
		if !strings.HasPrefix(saw.Cwd, filepath.Join(dir, "test", "edit", "work")+"/") || cwds[saw.Cwd] {
			t.Errorf("session %s ran in %s; want a worktree of its own under the workspace_dir", res.Session, saw.Cwd)
		}
		cwds[saw.Cwd] = true
		if !slices.Equal(saw.Saw, []string{".git", "README"}) {
			t.Errorf("session %s found %v; want the repository's README alone", res.Session, saw.Saw)
		}
		mirror := filepath.Join(dir, "test", "edit", "work", "mirror.git")
		if files := gitOut(t, "", "--git-dir="+mirror, "ls-tree", "--name-only", ws.Branch); files != "README\nattempt-0.txt" {
			t.Errorf("branch %s holds %q", ws.Branch, files)
		}
		f.checkAudit(res.Session)
		recs, err := store.ReadAudit(context.Background(), f.n.Bus.JS, res.Session)
		if err != nil {
			t.Fatal(err)
		}
		if last := recs[len(recs)-1]; last.Kind != "session.ended" || last.Workspace == nil || last.Workspace.Head != ws.Head {
			t.Errorf("session %s: its audit ends with %+v; want session.ended with its workspace", res.Session, last)
		}
	}
	for i := range n {
		e := <-ended
		if e.Workspace == nil || e.Workspace.Branch != "agentmux/"+e.Session || e.Workspace.Files != 1 {
			t.Errorf("session.ended %d: workspace %+v", i, e.Workspace)
		}
	}
	if after := gitOut(t, repo, "for-each-ref"); after != refs {
		t.Errorf("the repository's refs changed:\n%s", after)
	}
	if st := gitOut(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the person's checkout changed:\n%s", st)
	}
}

// TestRetryInAFreshWorkspace: an attempt that crashes leaves its workspace (keep =
// on_failure); the retry starts from base in a fresh one, which does not hold the
// crashed attempt's file, and the branch is the retry's work.
func TestRetryInAFreshWorkspace(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	f := start(t, editorHost("clone", repo, dir, "retries = 1"))
	res := f.run("edit", "crash")
	saw, ws := sawOf(t, res), res.Workspace
	if !res.OK || ws == nil || ws.Files != 1 {
		t.Fatalf("ok %v, workspace %+v (%s)", res.OK, ws, res.Error)
	}
	if slices.Contains(saw.Saw, "attempt-0.txt") {
		t.Errorf("the retry found the crashed attempt's file: %v", saw.Saw)
	}
	if files := gitOut(t, "", "--git-dir="+filepath.Join(dir, "test", "edit", "work", "mirror.git"), "ls-tree", "--name-only", ws.Branch); files != "README\nattempt-1.txt" {
		t.Errorf("branch %s holds %q; want the retry's file alone", ws.Branch, files)
	}
	kept := filepath.Join(dir, "test", "edit", "work", res.Session+".0", "attempt-0.txt")
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the crashed attempt's workspace was not kept: %v", err)
	}
}

// collect decodes every event on subject of f's bus into a channel, until the test ends.
func collect[T any](t *testing.T, f *fixture, subject string) <-chan T {
	t.Helper()
	out := make(chan T, 256)
	sub, err := f.n.Bus.Conn.Subscribe(subject, func(m *nats.Msg) {
		var v T
		if json.Unmarshal(m.Data, &v) == nil {
			out <- v
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := f.n.Bus.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWorkspaceAgentCannotWriteTheRepository plays an agent in a worktree that tries to
// write the person's checkout, plant a hook in the repository, and forge the node's
// record of the workspaces (which the node reads to remove them): its sandbox refuses
// all three, and its own work still lands on its branch.
func TestWorkspaceAgentCannotWriteTheRepository(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	f := start(t, editorHost("worktree", repo, dir, ""))
	records := filepath.Join(dir, "test", "edit", "records")
	targets := []string{filepath.Join(repo, "README"), filepath.Join(repo, ".git", "hooks", "post-checkout"), filepath.Join(records, "forged.1.json")}
	res := f.run("edit", "escape "+strings.Join(targets, " "))
	saw := sawOf(t, res)
	if len(saw.Wrote) > 0 {
		t.Errorf("the agent wrote %v", saw.Wrote)
	}
	if b, _ := os.ReadFile(targets[0]); string(b) != "hello\n" {
		t.Errorf("the person's README is now %q", b)
	}
	if res.Workspace == nil || res.Workspace.Files != 1 || !res.OK {
		t.Errorf("its own work: ok %v, workspace %+v; want its file on its branch", res.OK, res.Workspace)
	}
}

// TestWorkspaceSessionsAreWalled plays a session that attacks another of its host
// while it runs, in worktrees of one mirror and in clones of it: it can write neither
// the other's checkout, nor its HEAD, nor the other's branch, nor the mirror's
// configuration (nor, from a clone, the mirror's objects); its own commit, made with git
// by the agent itself, goes in and ends on its own branch. The other session's branch
// holds only its own work.
func TestWorkspaceSessionsAreWalled(t *testing.T) {
	for _, mode := range []string{"worktree", "clone"} {
		t.Run(mode, func(t *testing.T) { walled(t, mode) })
	}
}

func walled(t *testing.T, mode string) {
	repo, dir := gitRepo(t), t.TempDir()
	f := start(t, editorHost(mode, repo, dir, "pool = 2\nquestion_timeout = \"4s\"\napproval_default = \"yes\"")+`
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "keep big"
supervisor = "nobody"
`)
	victim := make(chan *agent.Result, 1)
	id := f.n.Submit("edit", "", "big", victim)
	work := filepath.Join(dir, "test", "edit", "work")
	mirror := filepath.Join(work, "mirror.git")
	checkout := filepath.Join(work, id+".0")
	proctest.Within(t, 20*time.Second, func() error {
		_, err := os.Stat(filepath.Join(checkout, "big.bin"))
		return err
	})
	targets := []string{filepath.Join(checkout, "planted.txt"), filepath.Join(mirror, "refs", "heads", "agentmux", id),
		filepath.Join(mirror, "config"), filepath.Join(mirror, "HEAD")}
	if mode == "worktree" {
		// The mirror's objects are where a worktree's commits go: shared (docs/workspaces.md).
		targets = append(targets, filepath.Join(mirror, "worktrees", id+".0", "HEAD"))
	} else {
		targets = append(targets, filepath.Join(checkout, ".git", "HEAD"), filepath.Join(mirror, "objects", "planted"))
	}
	res := f.run("edit", "escape commit "+strings.Join(targets, " "))
	saw := sawOf(t, res)
	if len(saw.Wrote) > 0 {
		t.Errorf("a session wrote %v, of another session and the mirror", saw.Wrote)
	}
	if !saw.Committed || !res.OK || res.Workspace == nil {
		t.Fatalf("the attacker's own commit: %v, ok %v, workspace %+v; want its commit in", saw.Committed, res.OK, res.Workspace)
	}
	if msg := gitOut(t, "", "--git-dir="+mirror, "log", "-1", "--format=%s", res.Workspace.Branch); msg != "by the agent" {
		t.Errorf("the attacker's branch ends with %q; want its own commit", msg)
	}
	v := <-victim
	if v.Workspace == nil {
		t.Fatalf("the victim's session: %+v", v)
	}
	if files := gitOut(t, "", "--git-dir="+mirror, "ls-tree", "--name-only", v.Workspace.Branch); files != "README\nattempt-0.txt\nbig.bin" {
		t.Errorf("the victim's branch holds %q; want only its own files", files)
	}
}

// TestPipelineStagesShareAWorkspace: a pipeline's second stage, on another host of the
// node (its own mirror, a clone where the first had a worktree), finds the first stage's
// file in its workspace, and the run's branch holds both stages' files, each stage's
// end naming it.
func TestPipelineStagesShareAWorkspace(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	check := strings.Replace(editorHost("clone", repo, dir, ""), "[hosts.edit]", "[hosts.check]", 1)
	f := start(t, editorHost("worktree", repo, dir, "")+check+`
[pipelines.two]
[[pipelines.two.stages]]
name = "first"
host = "edit"
prompt = "write first.txt"
[[pipelines.two.stages]]
name = "second"
host = "check"
prompt = "write second.txt"
`)
	run := f.runPipeline("two", nil)
	if run.Outcome != wire.StageOK {
		t.Fatalf("run %+v", run)
	}
	var saw editorSaw
	if err := json.Unmarshal([]byte(run.Stages[1].Text), &saw); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(saw.Saw, "first.txt") {
		t.Errorf("the second stage found %v; want the first stage's file", saw.Saw)
	}
	first, second := run.Stages[0].Workspace, run.Stages[1].Workspace
	if first == nil || second == nil || first.Branch != "agentmux/"+run.ID || second.Branch != first.Branch || second.Base != first.Head {
		t.Fatalf("stages' workspaces %+v and %+v; want one branch, the second from the first's head", first, second)
	}
	mirror := filepath.Join(dir, "test", "check", "work", "mirror.git")
	if second.Mirror != mirror {
		t.Errorf("the second stage's branch is in %s; want the check host's mirror %s", second.Mirror, mirror)
	}
	if files := gitOut(t, "", "--git-dir="+mirror, "ls-tree", "--name-only", second.Branch); files != "README\nfirst.txt\nsecond.txt" {
		t.Errorf("the run's branch holds %q", files)
	}
}

// TestWorkspaceOverItsCap: a session whose workspace grows over max_workspace_bytes is
// stopped, at its next request, with an error that says so; the host's gauge of
// workspace bytes goes back to 0 when its workspace is closed.
func TestWorkspaceOverItsCap(t *testing.T) {
	f, res := overCap(t, "big")
	if res.OK || !strings.Contains(res.Error, "over the host's max_workspace_bytes (100000); the session was stopped") {
		t.Fatalf("ok %v, error %q; want the session stopped for its workspace's size", res.OK, res.Error)
	}
	if res.Workspace == nil || res.Workspace.Bytes < 1<<20 || res.Workspace.Path == "" {
		t.Errorf("workspace %+v; want its size and its path, kept on failure", res.Workspace)
	}
	if got := testutil.ToFloat64(f.n.Metrics.WorkspaceOver.WithLabelValues("edit")); got != 1 {
		t.Errorf("agentmux_workspace_over_cap_total = %v; want 1", got)
	}
	if got := testutil.ToFloat64(f.n.Metrics.WorkspaceBytes.WithLabelValues("edit")); got != 0 {
		t.Errorf("agentmux_workspace_bytes = %v with no workspace open; want 0", got)
	}
}

// overCap runs an editor session of prompt in a worktree capped at 100 kB. Its approval
// waits for a supervisor that never answers, so the session is still running when the
// measurement its request asked for arrives.
func overCap(t *testing.T, prompt string) (*fixture, *agent.Result) {
	t.Helper()
	repo, dir := gitRepo(t), t.TempDir()
	f := start(t, editorHost("worktree", repo, dir, "max_workspace_bytes = 100000\nquestion_timeout = \"25s\"")+`
[supervisors.nobody]
strategy = "external"
[[routes]]
supervisor = "nobody"
`)
	return f, f.run("edit", prompt)
}

// TestWorkspaceTMPDIRCountsAndGoes: a session's TMPDIR is its own, counted in
// max_workspace_bytes (1 MiB written there stops it), and removed when its process
// exits: nothing of it is left behind.
func TestWorkspaceTMPDIRCountsAndGoes(t *testing.T) {
	_, res := overCap(t, "bigtmp")
	if res.OK || !strings.Contains(res.Error, "over the host's max_workspace_bytes (100000); the session was stopped") {
		t.Fatalf("ok %v, error %q; want the session stopped for what its TMPDIR holds", res.OK, res.Error)
	}
	if res.Workspace == nil || res.Workspace.Bytes >= 1<<20 {
		t.Fatalf("workspace %+v; want the checkout kept, without the megabyte, which was in TMPDIR", res.Workspace)
	}
	tmp, err := os.ReadFile(filepath.Join(res.Workspace.Path, "tmpdir.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tmp), "agentmux-hosts.edit.") {
		t.Errorf("the session's TMPDIR %s is not inside its sandbox's", tmp)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if _, err := os.Stat(string(tmp)); !os.IsNotExist(err) {
			return fmt.Errorf("the session's TMPDIR %s is still there (%v)", tmp, err)
		}
		return nil
	})
}

// collider asks to edit the file its prompt names ("edit PATH [wait FILE]"), writes it
// when allowed, and with wait stays until FILE exists. Its result says whether it was
// allowed.
const collider = `
import json, os, sys, time
m = json.loads(sys.stdin.readline())
args = m["text"].split()
path = args[1]
print(json.dumps({"type": "approval", "id": "e1", "description": "Edit " + path, "tool": "Edit", "input": {"file_path": path}}), flush=True)
answer = json.loads(sys.stdin.readline())
allowed = answer.get("value") == "yes"
if allowed:
    with open(path, "w") as f:
        f.write(m["session"] + "\n")
if len(args) > 3:
    while not os.path.exists(args[3]):
        time.sleep(0.02)
print(json.dumps({"type": "result", "text": json.dumps({"allowed": allowed, "reason": answer.get("reason", "")})}), flush=True)
`

// TestConflictRadarHoldsTheSecondEdit: two live sessions in worktrees of one repository
// ask to edit the same file. The first is allowed; the second's request carries the
// conflict, so the route for conflicts takes it and denies it; one workspace.conflict
// event names both, and it is counted once. Once the first session has ended, a third
// may edit the file.
func TestConflictRadarHoldsTheSecondEdit(t *testing.T) {
	repo, dir, out := gitRepo(t), t.TempDir(), t.TempDir()
	release := filepath.Join(out, "release")
	f := start(t, fmt.Sprintf(`[hosts.edit]
command = "python3"
args = ["-c", %q]
working_dir = %q
workspace = "worktree"
workspace_dir = %q
pool = 3
sandbox_write = [%q]
[supervisors.allow]
strategy = "static"
answers = { approval = "yes" }
[supervisors.hold]
strategy = "static"
answers = { approval = "no" }
[[routes]]
conflict = true
supervisor = "hold"
[[routes]]
supervisor = "allow"
`, collider, repo, dir, out))
	conflicts := collect[wire.ConflictEvent](t, f, wire.EventSubject("edit", "*", wire.EventWorkspaceConflict))
	first := make(chan *agent.Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := f.n.Run(ctx, "edit", "", "edit shared.txt wait "+release)
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	proctest.Within(t, 20*time.Second, func() error {
		if len(f.n.workspaces.radar.With(repo, "someone-else", []string{"shared.txt"})) == 0 {
			return errors.New("the radar has not heard of the first session's edit")
		}
		return nil
	})
	second := f.run("edit", "edit shared.txt")
	if allowed := editAllowed(t, second); allowed {
		t.Errorf("the second session was allowed to edit the file the first one edits")
	}
	select {
	case c := <-conflicts:
		if c.Session != second.Session || c.With.Paths[0] != "shared.txt" || len(c.With.Paths) != 1 || c.With.Branch == "" {
			t.Errorf("conflict %+v; want session %s with the first on shared.txt", c, second.Session)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no workspace.conflict event")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-first
	if res == nil || !editAllowed(t, res) {
		t.Fatalf("the first session: %+v", res)
	}
	if got := testutil.ToFloat64(f.n.Metrics.WorkspaceConflicts.WithLabelValues("edit")); got != 1 {
		t.Errorf("agentmux_workspace_conflicts_total = %v; want 1", got)
	}
	proctest.Within(t, 10*time.Second, func() error {
		if c := f.n.workspaces.radar.With(repo, "someone-else", []string{"shared.txt"}); len(c) > 0 {
			return fmt.Errorf("the radar still holds %+v after both sessions ended", c)
		}
		return nil
	})
	if third := f.run("edit", "edit shared.txt"); !editAllowed(t, third) {
		t.Error("a session after the others ended was not allowed to edit the file")
	}
	select {
	case c := <-conflicts:
		t.Errorf("another conflict: %+v", c)
	default:
	}
}

func editAllowed(t *testing.T, res *agent.Result) bool {
	t.Helper()
	var r struct{ Allowed bool }
	if err := json.Unmarshal([]byte(res.Text), &r); err != nil {
		t.Fatalf("session %s: result %q (%s)", res.Session, res.Text, res.Error)
	}
	return r.Allowed
}

// TestClaudeCodeWritesInItsWorktree: the real Claude Code CLI, started in its session's
// worktree, writes a file there with its Write tool once the fleet approves; the
// approval tells the conflict radar which file, the branch holds the file, and the
// person's checkout does not.
func TestClaudeCodeWritesInItsWorktree(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	const session = "s-claude-ws"
	file := filepath.Join(dir, "test", "claude", "work", session+".0", "hello.txt")
	f := newFakeAnthropic(t,
		[]block{{Text: "I will write the file."}, {Tool: "Write", Input: map[string]any{"file_path": file, "content": "hi\n"}}},
		[]block{{Text: "Done: hello.txt is written."}},
	)
	n := start(t, claudeHost(t, "claude", f, repo, fmt.Sprintf("workspace = \"worktree\"\nworkspace_dir = %q", dir))+`
[supervisors.ops]
strategy = "static"
answers = { approval = "yes" }
[[routes]]
supervisor = "ops"
`)
	touched := collect[wire.WorkspaceTouch](t, n, wire.EventSubject("claude", session, wire.EventWorkspaceTouched))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := n.n.Run(ctx, "claude", session, "write hi to hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Workspace == nil || res.Workspace.Files != 1 || res.Workspace.Insertions != 1 || !res.Workspace.Committed {
		t.Fatalf("ok %v (%s), workspace %+v; want hello.txt committed on the branch", res.OK, res.Error, res.Workspace)
	}
	mirror := filepath.Join(dir, "test", "claude", "work", "mirror.git")
	if text := gitOut(t, "", "--git-dir="+mirror, "show", res.Workspace.Branch+":hello.txt"); text != "hi" {
		t.Errorf("the branch's hello.txt is %q", text)
	}
	if _, err := os.Stat(filepath.Join(repo, "hello.txt")); err == nil {
		t.Error("Claude Code wrote the person's checkout")
	}
	select {
	case tc := <-touched:
		if tc.Kind != wire.TouchEditing || !slices.Equal(tc.Paths, []string{"hello.txt"}) || tc.Branch != "agentmux/"+session {
			t.Errorf("touch %+v; want editing hello.txt on the session's branch", tc)
		}
	case <-time.After(10 * time.Second):
		t.Error("the Write approval told the radar nothing")
	}
}

// TestPushToTheRepositoryInTheSandbox: push = "origin" with the agents sandboxed (the
// default) puts the session's branch in the person's repository; the agent itself
// still cannot write that repository.
func TestPushToTheRepositoryInTheSandbox(t *testing.T) {
	repo, dir := gitRepo(t), t.TempDir()
	f := start(t, editorHost("worktree", repo, dir, `push = "origin"`))
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	res := f.run("edit", "escape "+hook)
	if saw := sawOf(t, res); len(saw.Wrote) > 0 {
		t.Errorf("the agent wrote %v", saw.Wrote)
	}
	ws := res.Workspace
	if !res.OK || ws == nil || ws.Error != "" || ws.Pushed != "origin" {
		t.Fatalf("ok %v, workspace %+v (%s); want it pushed to origin", res.OK, ws, res.Error)
	}
	if got := gitOut(t, repo, "branch", "--list", ws.Branch); !strings.Contains(got, ws.Branch) {
		t.Fatalf("the repository has no branch %s after the push: %q", ws.Branch, got)
	}
	if got := gitOut(t, repo, "rev-parse", ws.Branch); got != ws.Head {
		t.Errorf("the pushed branch is at %s; want the session's head %s", got, ws.Head)
	}
}
