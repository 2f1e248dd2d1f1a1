package node

import (
	"context"

	"github.com/agentmux/agentmux/ask"
	"github.com/agentmux/agentmux/store"
)

// asking is what sends the node's asks to supervisors: the Asker, and the directory
// that lists each supervisor's live members for its re-asks, kept from the nodes
// bucket until stop.
type asking struct {
	nodes     *store.Nodes
	asker     *ask.Asker
	directory *ask.Directory
	stop      func()
}

func (n *Node) startAsker(ctx context.Context) error {
	nodes, err := openDeclared(ctx, func() (*store.Nodes, error) { return store.OpenNodes(ctx, n.Bus.JS) })
	if err != nil {
		return err
	}
	n.asking.nodes, n.asking.directory = nodes, ask.NewDirectory()
	watching, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	if err := nodes.Watch(watching, n.asking.directory.Update, func() { close(done) }); err != nil {
		stop()
		return err
	}
	n.asking.stop = func() { stop(); <-done }
	n.asking.asker, err = ask.NewAsker(n.Bus.Conn, ask.AskerConfig{Log: n.log, Counters: n.Metrics.AskCounters(), OnWithdrawn: n.withdraw,
		Members: n.asking.directory.Members, ClockOffset: n.conf.clockOffset})
	if err != nil {
		n.closeAsker()
		return err
	}
	n.Bus.AfterReconnect(n.asking.asker.Reconnected)
	return nil
}

// closeAsker stops the Asker and the directory's watch; once is enough, more do no harm.
func (n *Node) closeAsker() {
	if n.asking.asker != nil {
		n.asking.asker.Close()
	}
	if n.asking.stop != nil {
		n.asking.stop()
		n.asking.stop = nil
	}
}

// Replicas is how many copies each stream and bucket has.
