package wire

import "encoding/json"

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
	// Path is where the workspace was kept; empty when it was removed.
	Path  string `json:"path,omitempty"`
	Bytes int64  `json:"bytes,omitempty"` // its size when the session ended
	// Error says what of the above could not be done (a push refused, a commit failed).
	Error string `json:"error,omitempty"`
}

// raw is w as JSON, or nil for no workspace.
func (w *Workspace) raw() json.RawMessage {
	if w == nil {
		return nil
	}
	b, _ := json.Marshal(w)
	return b
}
