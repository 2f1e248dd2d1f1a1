package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/agentmux/agentmux/config"
)

func validate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr)
	path := fs.String("c", "agentmux.toml", "manifest `file`")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	m, code := loadManifest(*path, stderr)
	if m == nil {
		return code
	}
	fmt.Fprintf(stdout, "%s: ok (%d hosts, %d supervisors, %d routes)\n", *path, len(m.Hosts), len(m.Supervisors), len(m.Routes))
	return exitOK
}

// loadManifest loads path, printing problems; on failure it returns nil and the exit code.
func loadManifest(path string, stderr io.Writer) (*config.Manifest, int) {
	m, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, config.ErrInvalid) {
			return nil, exitUsage
		}
		return nil, exitUsage
	}
	return m, exitOK
}
