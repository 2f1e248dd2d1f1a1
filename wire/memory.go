package wire

// MemoryBucket is the KV bucket of llm supervisors' exchanges with sessions: one key
// per supervisor and session, shared by every member in the fleet.
const MemoryBucket = "agentmux_memory"

// Exchange is one request put to the model and its reply, kept as memory.
type Exchange struct {
	User      string `json:"user"`
	Assistant string `json:"assistant"`
}

// MemoryTurns is how many exchanges are kept per session (oldest go first).
const MemoryTurns = 20
