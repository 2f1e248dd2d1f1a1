package metrics

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Build is what this binary says of itself: its module version, and the VCS revision
// it was built from, so that a fleet in a rolling upgrade shows which node runs what.
type Build struct {
	Version  string // the module version (v1.2.3), or "(devel)" for a build from a work tree
	Revision string // the VCS revision, "" when the build had none (go run, go test)
	Time     string // the revision's commit time (RFC 3339), or ""
	Modified bool   // built from a work tree with uncommitted changes
	Go       string // the Go version it was built with
}

// The linker sets these for a build that has no VCS information of its own, the image
// above all (its context leaves .git out): go build -ldflags "-X
// github.com/agentmux/agentmux/metrics.stampVersion=v1.2.3 -X …stampRevision=<sha>".
// Nothing writes them at run time; empty, the build's own information stands.
var stampVersion, stampRevision string

// ReadBuild reads this binary's build information, with what the linker stamped.
func ReadBuild() Build {
	b := readBuild()
	if stampVersion != "" {
		b.Version = stampVersion
	}
	if stampRevision != "" {
		b.Revision = stampRevision
	}
	return b
}

func readBuild() Build {
	b := Build{Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Go = bi.GoVersion
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// Version is this binary's Short version: what the node list and the User-Agent show.
func Version() string { return ReadBuild().Short() }

// Short is the module version, with a revision short enough to read for a build from a
// work tree ("(devel)+1a2b3c4d5e6f", "-dirty" when modified).
func (b Build) Short() string {
	if b.Version != "(devel)" || b.Revision == "" {
		return b.Version
	}
	rev := b.Revision[:min(12, len(b.Revision))]
	if b.Modified {
		rev += "-dirty"
	}
	return b.Version + "+" + rev
}

// String is the build in one line: "v1.2.3 (revision 1a2b3c4d5e6f, 2026-11-26T12:00:00Z, go1.26.0)".
func (b Build) String() string {
	var parts []string
	if b.Revision != "" {
		rev := b.Revision
		if b.Modified {
			rev += ", modified"
		}
		parts = append(parts, "revision "+rev)
	}
	if b.Time != "" {
		parts = append(parts, b.Time)
	}
	if b.Go != "" {
		parts = append(parts, b.Go)
	}
	if len(parts) == 0 {
		return b.Version
	}
	return fmt.Sprintf("%s (%s)", b.Version, strings.Join(parts, ", "))
}
