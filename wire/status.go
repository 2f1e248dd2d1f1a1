package wire

import "time"

// The ask protocol's status messages: a member of a supervisor's queue group sends them
// on an ask's reply subject, with no body, before its answer (see ask.Asker).
const (
	HeaderStatus = "Agentmux-Status" // on a status message; an answer has none
	HeaderMember = "Agentmux-Member" // the member (node) that sent it

	StatusAck      = "ack"      // the member has the ask and will decide it
	StatusAlive    = "alive"    // still deciding; sent every KeepAliveInterval
	StatusDeferred = "deferred" // a person answers (pending store); stop watching
	StatusRelease  = "release"  // the member lets go (it is stopping): ask another

	// KeepAliveInterval is how often a member says it is still deciding an ask.
	KeepAliveInterval = time.Second
)
