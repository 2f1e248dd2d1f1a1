package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/protocol"
)

// Peer is a system users would pick instead of agentmux to answer their agents'
// questions (a durable-execution engine: Temporal, Restate), driven by the same
// harness, agents and arrival schedule as agentmux and the baselines. The harness
// begins a session with the peer before its agent starts, asks it each request as the
// agent sends it, and ends the session when the agent is done. An implementation lives
// beside its SDK, in the bench/peers module, so agentmux's own module does not carry
// it.
type Peer interface {
	// Begin starts session's durable state: a workflow, a virtual object.
	Begin(ctx context.Context, session string) error
	// Ask returns the answer to request m of session once the peer holds it durably.
	// With fallback set, m is a question nobody answers and fallback its default,
	// due now: the peer records it and returns it.
	Ask(ctx context.Context, session string, m *protocol.Message, fallback json.RawMessage) (json.RawMessage, error)
	// End ends session, which failed if failed is set.
	End(ctx context.Context, session string, failed error) error
	// Durable counts the answers the peer holds durably, of the sessions whose names
	// begin with prefix.
	Durable(ctx context.Context, prefix string) (int64, error)
	// Processes are the peer's own processes (its servers, its SDK's services), whose
	// CPU and memory count with the harness's.
	Processes() []int
}

// RunPeer runs the scenario's sessions against peer, named name in the report and in
// its sessions' names (name-0, name-1, …): its CPU is this process's and its
// processes' (ServersCPU), its memory theirs too (ServersRSS), and Durable what
// peer.Durable counts of those sessions once every one has ended.
func RunPeer(ctx context.Context, c Config, name string, peer Peer, progress Progress) (*System, error) {
	ctx, cancel, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return (&harness{c: &c, peer: peer, prefix: name + "-"}).run(ctx, name, progress)
}

// peerDurableWait bounds the count of a peer's durable answers after its run.
const peerDurableWait = time.Minute

// procUsage is the CPU seconds and peak memory of some processes, summed.
type procUsage struct {
	cpu float64
	rss int64
}

func processesUsage(pids []int) (procUsage, error) {
	var sum procUsage
	for _, pid := range pids {
		u, err := processUsage(pid)
		if err != nil {
			return procUsage{}, fmt.Errorf("process %d: %w", pid, err)
		}
		sum.cpu += u.cpu
		sum.rss += u.rss
	}
	return sum, nil
}
