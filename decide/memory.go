package decide

import (
	"container/list"
	"context"
	"sync"

	"github.com/agentmux/agentmux/wire"
)

// memorySessions bounds the sessions an llm supervisor remembers in a process (least
// recently used go first); wire.MemoryTurns the exchanges kept per session.
const memorySessions = 1024

// memory keeps a supervisor's own exchanges with each session, as conversation
// history, in this process: the Memory of a process without a fleet's bucket.
type memory struct {
	mu       sync.Mutex
	sessions map[string]*list.Element
	order    *list.List // of *sessionMemory, most recent first
	max      int
	turns    int
}

type sessionMemory struct {
	session   string
	exchanges []wire.Exchange
}

func newMemory(sessions, turns int) *memory {
	return &memory{sessions: map[string]*list.Element{}, order: list.New(), max: sessions, turns: turns}
}

// History implements Memory; a process's memory is per supervisor already.
func (m *memory) History(_ context.Context, _, session string) ([]wire.Exchange, error) {
	return m.get(session), nil
}

// Remember implements Memory.
func (m *memory) Remember(_ context.Context, _, session string, x wire.Exchange) error {
	m.add(session, x)
	return nil
}

// get returns a copy of what is remembered of session.
func (m *memory) get(session string) []wire.Exchange {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[session]
	if !ok {
		return nil
	}
	m.order.MoveToFront(e)
	return append([]wire.Exchange(nil), e.Value.(*sessionMemory).exchanges...)
}

func (m *memory) add(session string, x wire.Exchange) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[session]
	if !ok {
		e = m.order.PushFront(&sessionMemory{session: session})
		m.sessions[session] = e
		if m.order.Len() > m.max {
			oldest := m.order.Back()
			m.order.Remove(oldest)
			delete(m.sessions, oldest.Value.(*sessionMemory).session)
		}
	}
	m.order.MoveToFront(e)
	sm := e.Value.(*sessionMemory)
	sm.exchanges = append(sm.exchanges, x)
	if len(sm.exchanges) > m.turns {
		sm.exchanges = sm.exchanges[len(sm.exchanges)-m.turns:]
	}
}
