package workspace

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// TestRadarFindsEachConflictOnce: a second session touching a file the first touched
// conflicts with it, once per pair and file, whichever of the two touches it again; a
// session on another repository never conflicts; an ended session is forgotten.
func TestRadarFindsEachConflictOnce(t *testing.T) {
	r := NewRadar()
	touch := func(repo, session string, paths ...string) []wire.WorkspaceConflict {
		return r.Note(&wire.WorkspaceTouch{Repo: repo, Session: session, Host: "h", Node: "n", Branch: "agentmux/" + session,
			Kind: wire.TouchEditing, Paths: paths, Time: 1})
	}
	if c := touch("r", "a", "x.go", "y.go"); len(c) != 0 {
		t.Fatalf("the first touch conflicts with %+v", c)
	}
	if c := touch("other", "z", "x.go"); len(c) != 0 {
		t.Fatalf("a session on another repository conflicts with %+v", c)
	}
	c := touch("r", "b", "y.go", "x.go", "w.go")
	if len(c) != 1 || c[0].Session != "a" || !slices.Equal(c[0].Paths, []string{"x.go", "y.go"}) || c[0].Branch != "agentmux/a" {
		t.Fatalf("b's touch: %+v; want a on x.go and y.go", c)
	}
	if c := touch("r", "a", "x.go"); len(c) != 0 {
		t.Errorf("a touching x.go again is news again: %+v", c)
	}
	if c := r.With("r", "c", []string{"w.go", "q.go"}); len(c) != 1 || c[0].Session != "b" || !slices.Equal(c[0].Paths, []string{"w.go"}) {
		t.Errorf("With for c: %+v; want b on w.go", c)
	}
	r.Ended("b")
	if c := r.With("r", "c", []string{"w.go", "x.go"}); len(c) != 1 || c[0].Session != "a" || !slices.Equal(c[0].Paths, []string{"x.go"}) {
		t.Errorf("With after b ended: %+v; want a on x.go alone", c)
	}
	if c := touch("r", "b", "x.go"); len(c) != 1 {
		t.Errorf("b's next attempt on x.go: %+v; want a conflict again, b having ended", c)
	}
}

// TestRequestPaths: the files an approval asks to change, by their place in the
// repository: an edit tool's file, relative to where the agent started, and the paths a
// dialect lists; a read, a path outside the checkout and one in .git are not changes.
func TestRequestPaths(t *testing.T) {
	ws := &Workspace{Path: "/w/s.1", Cwd: "/w/s.1/svc"}
	for _, tc := range []struct {
		request string
		want    []string
	}{
		{`{"type":"approval","tool":"Edit","input":{"file_path":"/w/s.1/svc/main.go"}}`, []string{"svc/main.go"}},
		{`{"type":"approval","tool":"Write","input":{"file_path":"api.go"}}`, []string{"svc/api.go"}},
		{`{"type":"approval","tool":"Read","input":{"file_path":"/w/s.1/README"}}`, nil},
		{`{"type":"approval","tool":"Edit","input":{"file_path":"/etc/passwd"}}`, nil},
		{`{"type":"approval","tool":"Edit","input":{"file_path":"../.git/config"}}`, nil},
		{`{"type":"approval","tool":"Edit","input":{},"paths":["/w/s.1/a.go","b.go","/w/s.1/a.go"]}`, []string{"a.go", "svc/b.go"}},
		{`{"type":"approval","tool_kind":"edit","input":{"path":"/w/s.1/c.go"}}`, []string{"c.go"}},
	} {
		if got := ws.RequestPaths(json.RawMessage(tc.request)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v; want %v", tc.request, got, tc.want)
		}
	}
}
