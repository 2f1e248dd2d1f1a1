package config

import (
	"strings"
	"testing"
)

// TestWorkspaceDefaults: a worktree host with only working_dir checks that directory's
// repository out, on agentmux/<session>, kept on failure, committing what a session
// left; the agent starts where working_dir lies in a repository given apart.
func TestWorkspaceDefaults(t *testing.T) {
	m, err := Parse("/src/agentmux.toml", []byte(`
[hosts.a]
command = "x"
working_dir = "app"
workspace = "worktree"
[hosts.b]
command = "x"
working_dir = "/src/mono/svc/api"
workspace = "clone"
repo = "/src/mono"
base = "release"
push = "git@github.com:team/mono.git"
commit = false
keep = "always"
workspace_dir = "ws"
[hosts.c]
command = "x"
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := m.Hosts["a"].Workspace, m.Hosts["b"].Workspace, m.Hosts["c"].Workspace
	if a.Repo != "/src/app" || a.BranchOf("s-1") != "agentmux/s-1" || a.Keep != KeepOnFailure || !a.Commits() || a.Subdir != "" {
		t.Errorf("a: %+v", a)
	}
	if b.Subdir != "svc/api" || b.Commits() || b.Keep != KeepAlways || b.Dir != "/src/ws" || !IsURL(b.Push) {
		t.Errorf("b: %+v", b)
	}
	if c.Mode != WorkspaceShared || c.Isolated() {
		t.Errorf("c: %+v; want shared", c)
	}
}

// TestWorkspaceProblems: each mistake is named with what to do.
func TestWorkspaceProblems(t *testing.T) {
	e := parseErr(t, `
[hosts.a]
command = "x"
workspace = "container"
[hosts.b]
command = "x"
working_dir = "/r"
workspace = "worktree"
branch = "feature"
keep = "sometimes"
max_workspace_bytes = -1
[hosts.c]
command = "x"
repo = "/r"
[hosts.d]
command = "x"
workspace = "clone"
base = "--upload-pack=evil"
`)
	text := e.Error()
	for _, want := range [][2]string{
		{"hosts.a.workspace (", `"container" is not a workspace; use "shared" or "worktree" or "clone"`},
		{"hosts.b.branch (", `"feature" has no {session}`},
		{"hosts.b.keep (", `"sometimes" is not a keep policy`},
		{"hosts.b.max_workspace_bytes (", "-1 is negative"},
		{"hosts.c.repo (", `repo is for a workspace of its own per session; set workspace = "worktree" or "clone"`},
		{"hosts.d.base (", `"--upload-pack=evil" starts with '-', which git would read as an option`},
		{"hosts.d.repo (", "name the repository each session checks out"},
	} {
		found := false
		for line := range strings.Lines(text) {
			found = found || strings.Contains(line, want[0]) && strings.Contains(line, want[1])
		}
		if !found {
			t.Errorf("missing %s…: %s in:\n%s", want[0], want[1], text)
		}
	}
}

func TestIsURL(t *testing.T) {
	for repo, want := range map[string]bool{
		"https://github.com/a/b.git": true, "ssh://git@h/r": true, "git@github.com:a/b.git": true, "file:///srv/r.git": true,
		"/srv/repo": false, "../repo": false, "dir/with@at:colon/x": false, "repo": false,
	} {
		if IsURL(repo) != want {
			t.Errorf("IsURL(%q) = %v", repo, !want)
		}
	}
}
