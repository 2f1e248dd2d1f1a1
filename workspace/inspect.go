package workspace

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/agentmux/agentmux/wire"
)

// MaxDiff is how many bytes of a diff a node sends; the rest is cut.
const MaxDiff = 512 << 10

var objectName = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// List is the workspaces p's root holds, each with its size now.
func (p *Provider) List() ([]Record, error) {
	recs, err := p.root.Records()
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		r.Bytes = Size(r.Path)
		out = append(out, *r)
	}
	return out, nil
}

// Diff is what a session changed: from req.Base to req.Head in the mirror (an ended
// session's branch, from its end's record), or, without Head, what the session's open
// checkout holds now compared with its base, and the files it made that git does not
// track yet. It returns the text, cut at MaxDiff, and whether it was cut.
func (p *Provider) Diff(ctx context.Context, req wire.WorkspaceDiff) (string, bool, error) {
	stat := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv"}
	if req.Stat {
		stat = append(stat, "--stat")
	}
	var out string
	if req.Head != "" {
		if !objectName.MatchString(req.Base) || !objectName.MatchString(req.Head) {
			return "", false, fmt.Errorf("workspace: base %q and head %q must be commit ids", req.Base, req.Head)
		}
		var err error
		if out, err = p.git.run(ctx, localTimeout, "", append(append([]string{"--git-dir=" + p.root.mirror()}, stat...), req.Base, req.Head, "--")...); err != nil {
			return "", false, fmt.Errorf("workspace: %w; the node's mirror may have lost the branch (workspace clean does not remove branches)", err)
		}
	} else {
		rec, err := p.open(req.Session, req.Attempt)
		if err != nil {
			return "", false, err
		}
		if out, err = p.git.run(ctx, localTimeout, rec.Path, append(stat, rec.Base, "--")...); err != nil {
			return "", false, fmt.Errorf("workspace: %w", err)
		}
		untracked, err := p.git.run(ctx, localTimeout, rec.Path, "ls-files", "--others", "--exclude-standard")
		if err != nil {
			return "", false, fmt.Errorf("workspace: %w", err)
		}
		for line := range strings.Lines(untracked) {
			out += "new, not yet added: " + line
		}
	}
	if len(out) > MaxDiff {
		return out[:MaxDiff], true, nil
	}
	return out, false, nil
}

// open is the record of session's checkout that is open or kept: attempt's, or its
// latest when attempt is 0 and none of attempt 0 is there.
func (p *Provider) open(session string, attempt int) (*Record, error) {
	recs, err := p.root.Records()
	if err != nil {
		return nil, err
	}
	var found *Record
	for _, r := range recs {
		if r.Session == session && (r.Attempt == attempt || attempt == 0 && (found == nil || r.Attempt > found.Attempt)) {
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("workspace: no open or kept workspace of session %s here; an ended session's diff is read from its branch", session)
	}
	return found, nil
}

// Clean removes the kept workspaces of session, or all the root's when session is "";
// their branches stay. It returns those it removed.
func (p *Provider) Clean(ctx context.Context, session string) ([]Record, error) {
	recs, err := p.root.Records()
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range recs {
		if r.State != StateKept || (session != "" && r.Session != session) {
			continue
		}
		ws := &Workspace{Session: r.Session, Attempt: r.Attempt, Mode: r.Mode, Path: r.Path}
		r.Bytes = Size(r.Path)
		if err := p.within(r.Path); err != nil {
			return out, err
		}
		p.remove(ctx, ws)
		if _, err := os.Stat(r.Path); err == nil {
			return out, fmt.Errorf("workspace: %s could not be removed; see the node's log", r.Path)
		}
		p.root.forget(r.Session, r.Attempt)
		out = append(out, *r)
	}
	return out, nil
}

// within refuses a path outside the root's work directory: a record names only what the
// node made, but a path is checked before anything is removed.
func (p *Provider) within(path string) error {
	if !strings.HasPrefix(path, p.root.Work()+string(os.PathSeparator)) {
		return fmt.Errorf("workspace: a record names %s, outside %s; it is left alone", path, p.root.Work())
	}
	return nil
}
