package wire

import (
	"time"
)

// Workspace is what a session left in a workspace of its own (a host with workspace =
// "worktree" or "clone"), in its session.ended event and audit record.
type Workspace struct {
	Mode   string `json:"mode"`   // worktree or clone
	Branch string `json:"branch"` // the session's branch: its result
	Base   string `json:"base"`   // the commit the branch started from
	Head   string `json:"head"`   // the branch's commit when the session ended
	// Dirty says the session left changes it did not commit; Committed, that agentmux
	// committed them on the branch (commit = true).
	Dirty     bool `json:"dirty,omitempty"`
	Committed bool `json:"committed,omitempty"`
	// Files changed, lines inserted and lines deleted from base to head.
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
	// Pushed is the remote the branch was pushed to.
	Pushed string `json:"pushed,omitempty"`
	// Mirror is the node's repository that holds the branch: on that machine,
	// `git fetch <mirror> <branch>` brings it into a checkout.
	Mirror string `json:"mirror,omitempty"`
	// Path is where the workspace was kept; empty when it was removed.
	Path  string `json:"path,omitempty"`
	Bytes int64  `json:"bytes,omitempty"` // its size when the session ended
	// Error says what of the above could not be done (a push refused, a commit failed).
	Error string `json:"error,omitempty"`
}

// WorkspaceRecord is a node's record of one workspace it holds: a running session's,
// or one kept after its session ended (keep). agentmux.ctl.<node>.workspaces answers a
// list of them.
type WorkspaceRecord struct {
	Node    string     `json:"node,omitempty"` // set by the node that answers
	Host    string     `json:"host"`
	Session string     `json:"session"`
	Attempt int        `json:"attempt"`
	Mode    string     `json:"mode"`
	Path    string     `json:"path"`
	Branch  string     `json:"branch"`
	Base    string     `json:"base,omitempty"`
	State   string     `json:"state"` // open (its session runs) or kept
	Opened  time.Time  `json:"opened"`
	Bytes   int64      `json:"bytes,omitempty"`  // its size when asked
	Result  *Workspace `json:"result,omitempty"` // once its session ended
}

// Workspace states.
const (
	WorkspaceOpen = "open"
	WorkspaceKept = "kept"
)

// WorkspaceDiff asks a node (agentmux.ctl.<node>.workspace-diff) for what a session
// changed in its workspace: from Base to Head in the host's mirror, or, without Head,
// from the workspace's base to what its open checkout holds now.
type WorkspaceDiff struct {
	Host    string `json:"host"`
	Session string `json:"session"`
	Attempt int    `json:"attempt"`
	Base    string `json:"base,omitempty"`
	Head    string `json:"head,omitempty"`
	Stat    bool   `json:"stat,omitempty"` // a summary of files, not the patch
}

// WorkspaceClean asks a node (agentmux.ctl.<node>.workspace-clean) to remove the kept
// workspaces of Host, or of Session alone when named.
type WorkspaceClean struct {
	Host    string `json:"host,omitempty"`
	Session string `json:"session,omitempty"`
}

// WorkspaceReply is a node's answer to a workspace request: the records it holds (list,
// clean: those removed), a diff's text, or why not.
type WorkspaceReply struct {
	Records   []WorkspaceRecord `json:"records,omitempty"`
	Diff      string            `json:"diff,omitempty"`
	Truncated bool              `json:"truncated,omitempty"` // the diff was cut to fit a message
	Error     string            `json:"error,omitempty"`
}

// Kinds of touch.
const (
	TouchEditing = "editing" // a request asks to change the files
	TouchChanged = "changed" // the workspace's files differ from its base
)

// WorkspaceTouch is the payload of a workspace.touched event: files a session in a
// workspace is about to change, or has changed, by their path in the repository.
type WorkspaceTouch struct {
	Repo    string   `json:"repo"` // the host's repo, as the manifest names it
	Session string   `json:"session"`
	Host    string   `json:"host"`
	Node    string   `json:"node"`
	Branch  string   `json:"branch"`
	Kind    string   `json:"kind"` // TouchEditing or TouchChanged
	Paths   []string `json:"paths"`
	Time    int64    `json:"time"` // unix milliseconds, by the touching node's clock
}

// WorkspaceConflict is another live session's touch of files a session touches too:
// the payload of a workspace.conflict event, and what the supervisors of a request
// that touches them are told (Ask.Conflicts).
type WorkspaceConflict struct {
	Paths   []string `json:"paths"`
	Session string   `json:"session"` // the other session
	Host    string   `json:"host"`
	Node    string   `json:"node"`
	Branch  string   `json:"branch"`
	Kind    string   `json:"kind"`
	Time    int64    `json:"time"`
}

// ConflictEvent is the payload of a workspace.conflict event: Session, on Branch, now
// touches what With touched.
type ConflictEvent struct {
	Repo    string            `json:"repo"`
	Session string            `json:"session"`
	Host    string            `json:"host"`
	Branch  string            `json:"branch"`
	With    WorkspaceConflict `json:"with"`
}
