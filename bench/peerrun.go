package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Peer names, as --peers takes them.
const (
	PeerTemporal = "temporal"
	PeerRestate  = "restate"
)

// peerStopGrace is how long a peer's run has to stop its servers once cancelled.
const peerStopGrace = 20 * time.Second

// runPeers runs the scenario on each of the scenario's peers, one after the other, by
// c.PeerCommand (cmd/peerload of the bench/peers module), and adds their systems to
// rep.
func runPeers(ctx context.Context, c *Config, progress Progress, rep *Report) error {
	scenario := *c
	scenario.Peers, scenario.PeerCommand = nil, nil
	scenario.Baselines, scenario.Probes, scenario.Nodes, scenario.Replicated = false, false, 0, false
	in, err := json.Marshal(scenario)
	if err != nil {
		return err
	}
	for _, name := range c.Peers {
		if err := Settle(ctx); err != nil {
			return err
		}
		s, err := runPeerCommand(ctx, c.PeerCommand, name, in, progress)
		if err != nil {
			return fmt.Errorf("bench: peer %s: %w", name, err)
		}
		rep.Systems = append(rep.Systems, s)
	}
	return nil
}

// runPeerCommand runs command for the peer named name with the scenario in on its
// stdin, passing on the progress it reports, and reads the system it measured.
func runPeerCommand(ctx context.Context, command []string, name string, in []byte, progress Progress) (*System, error) {
	cmd := exec.CommandContext(ctx, command[0], append(command[1:], "--peer", name)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // it stops its servers
	cmd.WaitDelay = peerStopGrace
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	cmd.Stdout = &out
	errs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", command[0], err)
	}
	said := peerProgress(errs, progress)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(command, " "), err, <-said)
	}
	var o PeerOutput
	if err := json.Unmarshal(out.Bytes(), &o); err != nil || o.System == nil {
		return nil, fmt.Errorf("its figures (%v): %.200q\n%s", err, out.Bytes(), <-said)
	}
	if o.Questions != nil {
		o.System.Questions.hist = hdrhistogram.Import(o.Questions)
	}
	return o.System, nil
}

// PeerOutput is what a peer's run writes on stdout: its system, and its questions'
// latencies in full, for the plot.
type PeerOutput struct {
	System    *System                `json:"system"`
	Questions *hdrhistogram.Snapshot `json:"questions,omitempty"`
}

// NewPeerOutput is s as a peer's run writes it.
func NewPeerOutput(s *System) PeerOutput {
	o := PeerOutput{System: s}
	if s.Questions.hist != nil {
		o.Questions = s.Questions.hist.Export()
	}
	return o
}

// peerSaidLines is how many of the last lines a peer's run wrote besides its progress
// are kept for an error.
const peerSaidLines = 30

// peerProgress reads a peer's run's stderr: its "progress <done> <total> <system>"
// lines go to progress, and the last other lines it wrote arrive on the channel once
// it is closed.
func peerProgress(r io.Reader, progress Progress) <-chan string {
	said := make(chan string, 1)
	go func() {
		var last []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 4)
			if len(f) == 4 && f[0] == "progress" {
				done, err1 := strconv.Atoi(f[1])
				total, err2 := strconv.Atoi(f[2])
				if err1 == nil && err2 == nil {
					progress(f[3], done, total)
					continue
				}
			}
			last = append(last, sc.Text())
			if len(last) > peerSaidLines {
				last = last[1:]
			}
		}
		said <- strings.Join(last, "\n")
	}()
	return said
}
