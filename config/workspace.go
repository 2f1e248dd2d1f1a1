package config

import (
	"os"
	"path/filepath"
	"strings"
)

// Workspace modes: where a host's sessions work.
const (
	WorkspaceShared   = "shared"   // every session in the host's working_dir
	WorkspaceWorktree = "worktree" // a git worktree of the repository per session
	WorkspaceClone    = "clone"    // a full clone of the repository per session
)

// When a session's workspace is kept after it ends.
const (
	KeepOnFailure = "on_failure"
	KeepAlways    = "always"
	KeepNever     = "never"
)

// DefaultBranch names a session's branch; {session} is its id.
const DefaultBranch = "agentmux/{session}"

// Workspace is where a host's sessions work ([hosts.X] keys): each in the host's
// working_dir (shared), or each in a checkout of its own of a git repository, on a
// branch of its own, which is its result.
type Workspace struct {
	Mode string `toml:"workspace"`
	// Repo is the repository: a path (relative to the manifest's folder) or a git URL;
	// default the host's working_dir.
	Repo string `toml:"repo"`
	// Base is the ref a session's branch starts from; default the repository's HEAD.
	Base string `toml:"base"`
	// Branch names a session's branch; it must hold {session}.
	Branch string `toml:"branch"`
	// Keep says when a workspace is kept after its session: KeepOnFailure, KeepAlways
	// or KeepNever. Its branch is kept either way.
	Keep string `toml:"keep"`
	// Push names a remote (or a URL) the branch is pushed to when the session ends ok.
	Push string `toml:"push"`
	// Commit commits what a session left uncommitted on its branch (default true).
	Commit *bool `toml:"commit"`
	// MaxBytes caps a workspace's size: over it, the session is interrupted (0: none).
	MaxBytes int64 `toml:"max_workspace_bytes"`
	// Dir is where the node keeps the workspaces, under its name and the host's;
	// default $XDG_DATA_HOME/agentmux/workspaces (~/.local/share/agentmux/workspaces).
	Dir string `toml:"workspace_dir"`

	// Subdir is where in a checkout the agent starts: the host's working_dir's place
	// in a repository given as a path ("" for its top). Filled by Load.
	Subdir string `toml:"-"`
}

// Isolated reports whether each session works in a checkout of its own.
func (w *Workspace) Isolated() bool { return w.Mode == WorkspaceWorktree || w.Mode == WorkspaceClone }

// Commits reports whether what a session left uncommitted is committed on its branch.
func (w *Workspace) Commits() bool { return w.Commit == nil || *w.Commit }

// BranchOf is session's branch.
func (w *Workspace) BranchOf(session string) string {
	return strings.ReplaceAll(w.Branch, "{session}", session)
}

// IsURL reports whether repo names a remote repository rather than a path: a URL
// (scheme://…) or scp-like (user@host:path).
func IsURL(repo string) bool {
	if strings.Contains(repo, "://") {
		return true
	}
	at, colon := strings.Index(repo, "@"), strings.Index(repo, ":")
	return at > 0 && colon > at && !strings.ContainsRune(repo[:colon], filepath.Separator)
}

// workspace checks a host's workspace keys and gives them their defaults.
func (v *validator) workspace(at func(string) []string, h *Host, manifestPath string) {
	w := &h.Workspace
	v.enum(at("workspace"), &w.Mode, WorkspaceShared, "a workspace", WorkspaceShared, WorkspaceWorktree, WorkspaceClone)
	if !w.Isolated() {
		for _, key := range []string{"repo", "base", "branch", "keep", "push", "commit", "max_workspace_bytes", "workspace_dir"} {
			if v.written(at(key)...) {
				v.add(at(key), "%s is for a workspace of its own per session; set workspace = %q or %q, or leave %s out", key, WorkspaceWorktree, WorkspaceClone, key)
			}
		}
		return
	}
	v.enum(at("keep"), &w.Keep, KeepOnFailure, "a keep policy", KeepOnFailure, KeepAlways, KeepNever)
	if w.Branch == "" {
		w.Branch = DefaultBranch
	}
	if !strings.Contains(w.Branch, "{session}") {
		v.add(at("branch"), "%q has no {session}: sessions at once would share one branch; e.g. %q", w.Branch, DefaultBranch)
	}
	for key, value := range map[string]string{"base": w.Base, "branch": w.Branch, "push": w.Push, "repo": w.Repo} {
		if strings.HasPrefix(value, "-") {
			v.add(at(key), "%q starts with '-', which git would read as an option; name a ref, a path or a URL", value)
		}
	}
	if w.MaxBytes < 0 {
		v.add(at("max_workspace_bytes"), "%d is negative; use 0 for no cap", w.MaxBytes)
	}
	if w.Dir != "" {
		w.Dir = filepath.Clean(v.dir(w.Dir, manifestPath))
	}
	dir := h.WorkingDir
	if w.Repo == "" {
		w.Repo = dir
		if w.Repo == "" {
			v.add(at("repo"), "name the repository each session checks out: repo = a path or a git URL, or the host's working_dir")
			return
		}
	}
	if IsURL(w.Repo) {
		return
	}
	w.Repo = filepath.Clean(v.dir(w.Repo, manifestPath))
	if _, err := os.Stat(w.Repo); err != nil {
		v.warn(at("repo"), "%q is not here; a session cannot start until it is a git repository", w.Repo)
	}
	if dir != "" {
		rel, err := filepath.Rel(w.Repo, dir)
		if err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			w.Subdir = rel
		}
	}
}
