package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/proctest"
	"github.com/agentmux/agentmux/wire"
	"github.com/chromedp/chromedp"
)

// stubborn is an agent that writes first.txt and hangs the first time it runs (it
// leaves a marker outside its workspace to know), and writes second.txt and ends the
// next. Its result lists what it found in its workspace.
const stubborn = `
import json, os, sys, time
marker = os.environ["MARKER"]
m = json.loads(sys.stdin.readline())
saw = sorted(os.listdir("."))
if not os.path.exists(marker):
    open(marker, "w").write("x")
    open("first.txt", "w").write("first\n")
    time.sleep(3600)
open("second.txt", "w").write("second\n")
print(json.dumps({"type": "result", "text": json.dumps(saw)}), flush=True)
`

// repoDir makes a test's folder with a repository in it ("repo") whose one commit holds
// file, and a folder the test's agents may write besides ("out").
func repoDir(t *testing.T, file, text string) (dir, repo, out string) {
	t.Helper()
	dir = t.TempDir()
	repo, out = filepath.Join(dir, "repo"), filepath.Join(dir, "out")
	for _, d := range []string{repo, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, file), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "--quiet", "--initial-branch=main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "--quiet", "-m", "first")
	return dir, repo, out
}

func gitRun(t *testing.T, dir string, args ...string) string {
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

// TestWorkspaceSurvivesAKilledNode: `agentmux up` is killed with SIGKILL while a session
// works in its worktree; the node started again on the same store and name removes that
// worktree, and the task's next attempt runs in a fresh one from base, whose branch is
// pushed to a bare repository when it ends ok. `agentmux workspace` lists the kept
// workspace, shows and diffs the session's work, and cleans the workspace up.
func TestWorkspaceSurvivesAKilledNode(t *testing.T) {
	t.Parallel()
	dir, repo, out := repoDir(t, "README", "hello\n")
	target, workspaces := filepath.Join(dir, "target.git"), filepath.Join(dir, "ws")
	gitRun(t, dir, "init", "--quiet", "--bare", target)
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.w]
command = "python3"
args = ["-c", %q]
env = { MARKER = %q }
sandbox_write = [%q]
working_dir = %q
workspace = "worktree"
workspace_dir = %q
push = %q
keep = "always"
`, proctest.FreePort(t), filepath.Join(dir, "store"), stubborn, filepath.Join(out, "marker"), out, repo, workspaces, target)
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "ws1")
	until(t, "agentmux up", up.stderr, "node up")
	if code := runtimeProc(t, "submit", "-c", manifest, "--id", "t-ws", "w", "work").wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("submit: exit %d", code)
	}
	var first wire.WorkspaceRecord
	proctest.EventuallyWithin(t, 30*time.Second, "the first attempt working in its worktree", func() bool {
		recs := workspaceRecords(t, manifest)
		if len(recs) != 1 {
			return false
		}
		first = recs[0]
		_, err := os.Stat(filepath.Join(first.Path, "first.txt"))
		return err == nil
	})
	if first.State != wire.WorkspaceOpen || first.Branch != "agentmux/t-ws" || first.Node != "ws1" {
		t.Fatalf("the running session's workspace: %+v", first)
	}
	kill(t, up)

	again := runtimeProc(t, "up", "-c", manifest, "--name", "ws1")
	until(t, "agentmux up again", again.stderr, "node up")
	if _, err := os.Stat(first.Path); err == nil {
		t.Errorf("the killed session's worktree %s is still there", first.Path)
	}
	if !strings.Contains(again.stderr.String(), "removed the workspaces of sessions an earlier node left running") {
		t.Errorf("the node did not say it reclaimed the workspace:\n%s", again.stderr)
	}
	var show struct {
		Live  []wire.WorkspaceRecord `json:"live"`
		Ended []wire.AuditRecord     `json:"ended"`
	}
	proctest.EventuallyWithin(t, 60*time.Second, "the task's next attempt ended", func() bool {
		p := runtimeProc(t, "workspace", "show", "-c", manifest, "t-ws", "-o", "json")
		if p.wait(t, 20*time.Second) != exitOK || json.Unmarshal([]byte(p.stdout.String()), &show) != nil {
			return false
		}
		return len(show.Ended) == 1
	})
	end := show.Ended[0]
	ws := end.Workspace
	if end.Outcome != "ok" || ws.Files != 1 || ws.Pushed != target || ws.Path == first.Path || ws.Path == "" {
		t.Fatalf("the next attempt ended %s with workspace %+v; want ok, second.txt alone, pushed, kept in a new worktree", end.Outcome, ws)
	}
	var result struct{ Text string }
	var saw []string
	if err := json.Unmarshal(end.Value, &result); err != nil || json.Unmarshal([]byte(result.Text), &saw) != nil || strings.Join(saw, ",") != ".git,README" {
		t.Errorf("the next attempt found %s in its worktree; want the repository's README alone", end.Value)
	}
	if head := gitRun(t, dir, "--git-dir="+target, "rev-parse", "agentmux/t-ws"); head != ws.Head {
		t.Errorf("the bare repository has agentmux/t-ws at %s; want %s", head, ws.Head)
	}
	if files := gitRun(t, dir, "--git-dir="+target, "ls-tree", "--name-only", "agentmux/t-ws"); files != "README\nsecond.txt" {
		t.Errorf("the pushed branch holds %q; want README and the second attempt's file", files)
	}

	diff := runtimeProc(t, "workspace", "diff", "-c", manifest, "t-ws")
	if code := diff.wait(t, 30*time.Second); code != exitOK || !strings.Contains(diff.stdout.String(), "+second") || strings.Contains(diff.stdout.String(), "first.txt") {
		t.Errorf("workspace diff: exit %d\n%s%s", code, diff.stdout, diff.stderr)
	}
	list := runtimeProc(t, "workspace", "list", "-c", manifest, "-o", "wide")
	if code := list.wait(t, 20*time.Second); code != exitOK || !strings.Contains(list.stdout.String(), "kept") || !strings.Contains(list.stdout.String(), "+1/-0") {
		t.Errorf("workspace list: exit %d\n%s%s", code, list.stdout, list.stderr)
	}
	clean := runtimeProc(t, "workspace", "clean", "-c", manifest, "--session", "t-ws")
	if code := clean.wait(t, 30*time.Second); code != exitOK || !strings.Contains(clean.stdout.String(), "removed "+ws.Path) {
		t.Errorf("workspace clean: exit %d\n%s%s", code, clean.stdout, clean.stderr)
	}
	if _, err := os.Stat(ws.Path); err == nil {
		t.Errorf("%s is still there after clean", ws.Path)
	}
	if recs := workspaceRecords(t, manifest); len(recs) != 0 {
		t.Errorf("workspaces after clean: %+v", recs)
	}
}

// workspaceRecords is what `agentmux workspace list -o json` prints.
func workspaceRecords(t *testing.T, manifest string) []wire.WorkspaceRecord {
	t.Helper()
	p := runtimeProc(t, "workspace", "list", "-c", manifest, "-o", "json")
	if code := p.wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("workspace list: exit %d\n%s", code, p.stderr)
	}
	var out []wire.WorkspaceRecord
	for line := range strings.Lines(p.stdout.String()) {
		var r wire.WorkspaceRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("workspace list -o json: %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// collider asks to edit the file its prompt names ("edit PATH [wait FILE]"), writes it
// when allowed, and with wait stays until FILE exists.
const colliderAgent = `
import json, os, sys, time
m = json.loads(sys.stdin.readline())
args = m["text"].split()
print(json.dumps({"type": "approval", "id": "e1", "description": "Edit " + args[1], "tool": "Edit", "input": {"file_path": args[1]}}), flush=True)
answer = json.loads(sys.stdin.readline())
if answer.get("value") == "yes":
    open(args[1], "w").write(m["session"] + "\n")
while len(args) > 3 and not os.path.exists(args[3]):
    time.sleep(0.02)
print(json.dumps({"type": "result", "text": str(answer.get("value"))}), flush=True)
`

// TestConsoleShowsAConflict: a session asks to edit a file another running session in
// a worktree of the same repository edits; the conflict route hands it to a person,
// whose card on the console page says which session touched the file, on which branch;
// the sessions table marks both sessions; the person denies it.
func TestConsoleShowsAConflict(t *testing.T) {
	t.Parallel()
	dir, repo, out := repoDir(t, "shared.txt", "base\n")
	release := filepath.Join(out, "release")
	manifest := filepath.Join(dir, "agentmux.toml")
	m := fmt.Sprintf(`[nats]
listen = "127.0.0.1:%d"
store_dir = %q
[metrics]
addr = "127.0.0.1:0"
[hosts.edit]
command = "python3"
args = ["-c", %q]
sandbox_write = [%q]
working_dir = %q
workspace = "worktree"
workspace_dir = %q
pool = 2
question_timeout = "5m"
[supervisors.allow]
strategy = "static"
answers = { approval = "yes" }
[supervisors.desk]
strategy = "human"
[[routes]]
conflict = true
supervisor = "desk"
[[routes]]
supervisor = "allow"
`, proctest.FreePort(t), filepath.Join(dir, "store"), colliderAgent, out, repo, filepath.Join(dir, "ws"))
	if err := os.WriteFile(manifest, []byte(m), 0o600); err != nil {
		t.Fatal(err)
	}
	up := runtimeProc(t, "up", "-c", manifest, "--name", "c1")
	until(t, "agentmux up", up.stderr, "node up")
	url := fmt.Sprintf("http://127.0.0.1:%d", proctest.FreePort(t))
	con := runtimeProc(t, "console", "-c", manifest, "--addr", strings.TrimPrefix(url, "http://"), "--as", "ana")
	until(t, "agentmux console", con.stderr, "console up")
	ctx := browser(t)
	do(t, ctx, "open the console's link", chromedp.Navigate(signInLink(t, con.stderr.String())), chromedp.WaitVisible(chromedp.CSS("#status.live")))

	first := runtimeProc(t, "submit", "-c", manifest, "--id", "t-first", "--follow", "edit", "edit shared.txt wait "+release)
	proctest.EventuallyWithin(t, 30*time.Second, "the first session editing shared.txt", func() bool {
		recs := workspaceRecords(t, manifest)
		if len(recs) != 1 {
			return false
		}
		b, _ := os.ReadFile(filepath.Join(recs[0].Path, "shared.txt"))
		return string(b) == "t-first\n"
	})
	second := runtimeProc(t, "submit", "-c", manifest, "--id", "t-second", "--follow", "edit", "edit shared.txt")
	card := cardFor(t, ctx, "Edit shared.txt")
	warning := text(t, ctx, card+" .conflict")
	if !strings.HasPrefix(warning, "Beware: session t-first (host edit, branch agentmux/t-first) ") || !strings.Contains(warning, "shared.txt") {
		t.Errorf("the card's warning: %q", warning)
	}
	get(t, ctx, "the sessions table marks the conflict", chromedp.Poll[bool](
		`["t-first", "t-second"].every(id => ((document.querySelector('#sessions tr[data-session="' + id + '"] .conflict') || {}).textContent || "").includes("shared.txt"))`,
		chromedp.WithPollingTimeout(20*time.Second)))
	shot(t, ctx, "conflict")
	do(t, ctx, "deny the second edit, saying why", chromedp.Click(chromedp.CSS(card+" button.deny")),
		chromedp.WaitVisible(chromedp.CSS(card+" input.reason")), chromedp.SendKeys(chromedp.CSS(card+" input.reason"), "t-first edits it\r"))
	outcome(t, ctx, card, `answered "no" by human:ana (t-first edits it)`)
	if code := second.wait(t, 60*time.Second); code != exitOK || !strings.Contains(second.stdout.String(), `"no"`) {
		t.Errorf("the second session: exit %d, %s; want the person's no", code, second.stdout)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t, 60*time.Second); code != exitOK || !strings.Contains(first.stdout.String(), `"yes"`) {
		t.Errorf("the first session: exit %d, %s", code, first.stdout)
	}
}

// TestFleetConflictAcrossNodes: two nodes of a three-server cluster each run one
// session of a host in worktrees of the same repository; the second session's request
// to edit the file the first one, on the other node, edits is held by the conflict
// route, through the bus.
func TestFleetConflictAcrossNodes(t *testing.T) {
	t.Parallel()
	dir, repo, out := repoDir(t, "shared.txt", "base\n")
	release := filepath.Join(out, "release")
	f := startFleet(t, fmt.Sprintf(`[hosts.edit]
command = "python3"
args = ["-c", %q]
sandbox_write = [%q]
working_dir = %q
workspace = "worktree"
workspace_dir = %q
pool = 1
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
`, colliderAgent, out, repo, filepath.Join(dir, "ws")))
	f.node(t, "a")
	f.node(t, "b")
	first := runtimeProc(t, "submit", "-c", f.manifest, "--id", "t-a", "--follow", "edit", "edit shared.txt wait "+release)
	var holder string
	proctest.EventuallyWithin(t, 60*time.Second, "the first session editing shared.txt", func() bool {
		recs := workspaceRecords(t, f.manifest)
		if len(recs) != 1 {
			return false
		}
		b, _ := os.ReadFile(filepath.Join(recs[0].Path, "shared.txt"))
		holder = recs[0].Node
		return string(b) == "t-a\n"
	})
	second := runtimeProc(t, "submit", "-c", f.manifest, "--id", "t-b", "--follow", "edit", "edit shared.txt")
	if code := second.wait(t, 60*time.Second); code != exitOK || !strings.Contains(second.stdout.String(), `"no"`) {
		t.Fatalf("the second session: exit %d, %s; want the conflict route's no\n%s", code, second.stdout, second.stderr)
	}
	events := second.stderr.String()
	if !strings.Contains(events, `"workspace.conflict"`) && !strings.Contains(events, ".workspace.conflict") {
		t.Errorf("no workspace.conflict event in the second session's events:\n%s", events)
	}
	if strings.Contains(events, `"node":"`+holder+`","attempt"`) {
		t.Errorf("both sessions ran on %s; the test wants them on two nodes:\n%s", holder, events)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t, 60*time.Second); code != exitOK || !strings.Contains(first.stdout.String(), `"yes"`) {
		t.Errorf("the first session: exit %d, %s", code, first.stdout)
	}
}
