package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// On macOS a program is confined by Seatbelt, the sandbox Claude Code and Codex use
// there: sandbox-exec runs it under a profile (SBPL) made here from the same Policy the
// Linux sandbox makes its Landlock ruleset from. The profile allows what it does not
// name, as Landlock handles only what it names; then, the last matching rule winning:
// writes are denied but to the writable trees and the devices; the denied trees are
// neither read nor written; the write-denied ones not written; the node's ports not
// connected to, on any address; and signals and process inspection reach only the
// programs of the same sandbox (Landlock's scoped signals).

// darwinDevices are the devices programs on macOS write beyond devices: the standard
// streams by descriptor, and DTrace's helper, which every program linked with the
// system's libraries opens.
var darwinDevices = []string{"/dev/fd", "/dev/dtracehelper"}

// sbRule is one rule of a Seatbelt profile: allow or deny operations on paths (each a
// subpath, or a literal file) or on TCP ports, on any address.
type sbRule struct {
	allow bool
	ops   string // "file-write*", "file-read* file-write*", "network-outbound", …
	paths []sbPath
	ports []uint16
	// target, for signal and process-info*: "same-sandbox".
	target string
	why    string // the comment above it
}

// sbPath is a path a rule names: a tree (subpath) or one file (literal).
type sbPath struct {
	path string
	tree bool
}

// seatbeltRules are p's rules, in the profile's order.
func (p Policy) seatbeltRules() ([]sbRule, error) {
	tree := func(paths []string) ([]sbPath, error) {
		abs, err := resolveAll(paths)
		if err != nil {
			return nil, err
		}
		out := make([]sbPath, len(abs))
		for i, a := range abs {
			out[i] = sbPath{path: a, tree: true}
		}
		return out, nil
	}
	write, err := tree(p.Write)
	if err != nil {
		return nil, err
	}
	for _, d := range slices.Concat(devices, darwinDevices) {
		write = append(write, sbPath{path: d, tree: d == "/dev/pts" || d == "/dev/fd"})
	}
	readDeny, err := tree(p.ReadDeny)
	if err != nil {
		return nil, err
	}
	writeDeny, err := tree(p.WriteDeny)
	if err != nil {
		return nil, err
	}
	rules := []sbRule{
		{ops: "file-write*", why: "It writes only its working directory, its temporary directory, the paths its manifest lists, and the devices."},
		{allow: true, ops: "file-write*", paths: write},
	}
	if len(readDeny) > 0 {
		rules = append(rules, sbRule{ops: "file-read* file-write*", paths: readDeny,
			why: "It neither reads nor writes the node's state directory, store and credential files."})
	}
	if len(writeDeny) > 0 {
		rules = append(rules, sbRule{ops: "file-write*", paths: writeDeny, why: "It reads but does not write the manifest and the rules files."})
	}
	if len(p.ConnectDeny) > 0 {
		rules = append(rules, sbRule{ops: "network-outbound", ports: p.ConnectDeny, why: "It connects to none of the node's ports, on any address."})
	}
	return append(rules,
		sbRule{ops: "signal process-info*", why: "It signals and inspects only the programs of its own sandbox."},
		sbRule{allow: true, ops: "signal", target: "same-sandbox"},
		sbRule{allow: true, ops: "process-info*", target: "same-sandbox"},
	), nil
}

// Seatbelt is p as a Seatbelt profile for the programs name runs ("hosts.claude").
func (p Policy) Seatbelt(name string) (string, error) {
	rules, err := p.seatbeltRules()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "(version 1)\n;; agentmux sandbox %s, made from the policy of its Landlock ruleset on Linux.\n(allow default)\n", sbComment(name))
	for _, r := range rules {
		if r.why != "" {
			fmt.Fprintf(&b, ";; %s\n", r.why)
		}
		verb := "deny"
		if r.allow {
			verb = "allow"
		}
		fmt.Fprintf(&b, "(%s %s", verb, r.ops)
		switch {
		case r.target != "":
			fmt.Fprintf(&b, " (target %s))\n", r.target)
			continue
		case len(r.paths) == 0 && len(r.ports) == 0:
			b.WriteString(")\n")
			continue
		}
		for _, path := range r.paths {
			kind := "literal"
			if path.tree {
				kind = "subpath"
			}
			fmt.Fprintf(&b, "\n    (%s %s)", kind, sbString(path.path))
		}
		for _, port := range r.ports {
			fmt.Fprintf(&b, "\n    (remote tcp \"*:%d\")", port)
		}
		b.WriteString(")\n")
	}
	return b.String(), nil
}

// sbString quotes s as an SBPL string.
func sbString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// sbComment keeps a name on its comment's line.
func sbComment(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
