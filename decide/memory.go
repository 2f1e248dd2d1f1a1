package decide

import (
	"container/list"
	"sync"
)

// Bounds of an llm supervisor's memory: the sessions it remembers (least recently used
// go first) and the exchanges kept per session (oldest go first).
const (
	memorySessions = 1024
	memoryTurns    = 20
)

// memory keeps a supervisor's own exchanges with each session, as conversation history.
type memory struct {
	mu       sync.Mutex
	sessions map[string]*list.Element
	order    *list.List // of *sessionMemory, most recent first
	max      int
	turns    int
}

type sessionMemory struct {
	session   string
	exchanges []exchange
}

func newMemory(sessions, turns int) *memory {
	return &memory{sessions: map[string]*list.Element{}, order: list.New(), max: sessions, turns: turns}
}

// get returns a copy of what is remembered of session.
func (m *memory) get(session string) []exchange {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[session]
	if !ok {
		return nil
	}
	m.order.MoveToFront(e)
	return append([]exchange(nil), e.Value.(*sessionMemory).exchanges...)
}

func (m *memory) add(session string, x exchange) {
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
