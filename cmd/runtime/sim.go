package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentmux/agentmux/sim"
)

func simCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("sim", stdout, stderr)
	script := fs.String("script", "", "JSON script `file` for every session (default: the prompt's script, else the flags below)")
	var g sim.Generate
	fs.IntVar(&g.Progress, "progress", 3, "progress messages per session")
	fs.IntVar(&g.Partials, "partials", 1, "partial messages per session")
	fs.IntVar(&g.Questions, "questions", 1, "questions per session (prompt, confirm, select in turn)")
	fs.IntVar(&g.Approvals, "approvals", 1, "approvals per session")
	fs.IntVar(&g.ToolCalls, "tool-calls", 0, "tool calls per session")
	fs.IntVar(&g.Unknown, "unknown", 0, "messages of an unknown type per session")
	fs.DurationVar(&g.Think, "think", 0, "pause between messages")
	fs.StringVar(&g.Mode, "mode", "", "failure mode: crash, hang or garbage")
	initMode := fs.String("init", "ack", "answer to init: ack, error or silent")
	caps := fs.String("capabilities", "interrupt,message", "capabilities declared in init_ack")
	if _, err := parse(fs, args); err != nil {
		return usageError(stderr, err)
	}
	opts := sim.Options{Generate: g, Init: *initMode, Stderr: stderr}
	if *caps != "" {
		opts.Capabilities = strings.Split(*caps, ",")
	}
	if *script != "" {
		b, err := os.ReadFile(*script)
		if err != nil {
			fmt.Fprintln(stderr, "agentmux sim:", err)
			return exitUsage
		}
		s, err := sim.ParseScript(b)
		if err != nil {
			fmt.Fprintln(stderr, "agentmux sim:", err)
			return exitUsage
		}
		opts.Script = s
	}
	err := sim.Run(os.Stdin, stdout, opts)
	var exit *sim.ErrExit
	if errors.As(err, &exit) {
		return exit.Code
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux sim:", err)
		return exitError
	}
	return exitOK
}
