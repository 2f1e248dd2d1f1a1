package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmux/agentmux/store"
	"github.com/agentmux/agentmux/wire"
)

// exportTimeout bounds an export: a node reads the part and sends it in chunks.
const exportTimeout = 2 * time.Minute

// checkpointsCommand lists a session's checkpoints, or exports a part of one.
func checkpointsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "export" {
		return exportCheckpoint(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	fs := newFlags("checkpoints", stdout, stderr)
	to := reachFlags(fs)
	out := newOutputFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	form, err := out.form()
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux checkpoints: want a session id: checkpoints -c <manifest> <session>, or checkpoints export <session>")
		return exitUsage
	}
	c, code := to.client("checkpoints", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(clientTimeout)
	defer cancel()
	list, err := store.ListCheckpoints(ctx, c.nc, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "agentmux checkpoints:", c.explain(err))
		return exitError
	}
	if form == outJSON {
		return jsonLines(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "session %s has no checkpoints\n", pos[0])
		return exitOK
	}
	header := []string{"SEQ", "TIME", "ATTEMPT", "NODE", "WHY", "SIZE", "PARTS"}
	rows := make([][]string, 0, len(list))
	for _, cp := range list {
		var parts []string
		for _, p := range cp.Parts {
			parts = append(parts, p.Name)
		}
		rows = append(rows, []string{strconv.Itoa(cp.Seq), time.UnixMilli(cp.Time).UTC().Format(time.RFC3339), strconv.Itoa(cp.Attempt),
			cp.Node, cp.Why, size(cp.Bytes), strings.Join(parts, ",")})
	}
	return table(stdout, header, rows)
}

// exportCheckpoint writes a part of a session's checkpoint to stdout, as a node sends
// it: operators alone may, for it holds what the agent knew.
func exportCheckpoint(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("checkpoints export", stdout, stderr)
	to := reachFlags(fs)
	seq := fs.Int("seq", 0, "the checkpoint's `seq`; 0: the session's latest")
	part := fs.String("part", "state", "the `part` to export: state (the agent's), place (the session's)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "agentmux checkpoints export: want a session id: checkpoints export -c <manifest> <session> [--seq n] [--part state] > state.json")
		return exitUsage
	}
	c, code := to.client("checkpoints export", stderr)
	if c == nil {
		return code
	}
	defer c.close()
	ctx, cancel := c.timeout(exportTimeout)
	defer cancel()
	inbox := c.nc.NewRespInbox()
	chunks := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(inbox, chunks)
	if err != nil {
		fmt.Fprintln(stderr, "agentmux checkpoints export:", c.explain(err))
		return exitError
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(wire.CheckpointExport{Session: pos[0], Seq: *seq, Part: *part})
	if err := c.nc.PublishRequest(wire.CheckpointExportSubject, inbox, req); err != nil {
		fmt.Fprintln(stderr, "agentmux checkpoints export:", c.explain(err))
		return exitError
	}
	if err := c.refused(); err != nil {
		fmt.Fprintln(stderr, "agentmux checkpoints export:", c.explain(err))
		return exitError
	}
	sum := sha256.New()
	for n := 0; ; n++ {
		var m *nats.Msg
		select {
		case m = <-chunks:
		case <-ctx.Done():
			fmt.Fprintln(stderr, "agentmux checkpoints export: no node answered in time; is a node up?", c.explain(ctx.Err()))
			return exitError
		}
		var ch wire.CheckpointChunk
		switch err := json.Unmarshal(m.Data, &ch); {
		case err != nil:
			fmt.Fprintln(stderr, "agentmux checkpoints export: a node answered what is not a chunk:", err)
			return exitError
		case ch.Error != "":
			fmt.Fprintln(stderr, "agentmux checkpoints export:", ch.Error)
			return exitError
		case ch.N != n:
			fmt.Fprintf(stderr, "agentmux checkpoints export: chunk %d came where %d was due: a chunk was lost; export again\n", ch.N, n)
			return exitError
		case ch.Done:
			if got := hex.EncodeToString(sum.Sum(nil)); got != ch.SHA256 {
				fmt.Fprintf(stderr, "agentmux checkpoints export: what came has SHA-256 %s, and the part was listed with %s; export again\n", got, ch.SHA256)
				return exitError
			}
			if cp := ch.Checkpoint; cp != nil {
				fmt.Fprintf(stderr, "checkpoint %d of session %s (node %s, attempt %d, %s): part %s\n", cp.Seq, cp.Session, cp.Node, cp.Attempt,
					time.UnixMilli(cp.Time).UTC().Format(time.RFC3339), *part)
			}
			return exitOK
		}
		sum.Write(ch.Data)
		if _, err := stdout.Write(ch.Data); err != nil {
			fmt.Fprintln(stderr, "agentmux checkpoints export:", err)
			return exitError
		}
	}
}
