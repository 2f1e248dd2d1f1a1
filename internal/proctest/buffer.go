package proctest

import (
	"bytes"
	"sync"
)

// Buffer is an output a test reads while a process, or a logger, writes it.
type Buffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
