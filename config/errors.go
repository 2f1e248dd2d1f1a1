package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every validation error, so callers can tell a bad manifest
// (exit 2) from an unreadable file.
var ErrInvalid = errors.New("config: invalid manifest")

// Problem is one thing wrong with a manifest, where it is, and what to do.
type Problem struct {
	File string
	Line int // 0 when unknown
	Col  int
	Key  string // dotted key path, e.g. hosts.worker.timeout
	Msg  string
}

func (p *Problem) Error() string {
	where := p.File
	if p.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
	if p.Key == "" {
		return fmt.Sprintf("config: %s: %s", where, p.Msg)
	}
	return fmt.Sprintf("config: %s (%s): %s", p.Key, where, p.Msg)
}

// Error is every problem found in one manifest.
type Error struct {
	Problems []*Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }
