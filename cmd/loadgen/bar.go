package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// bar is a progress bar drawn only on a terminal.
type bar struct {
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	last time.Time
}

func newBar(w io.Writer) *bar {
	b := &bar{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	return b
}

func (b *bar) update(system string, done, total int) {
	if !b.tty {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if done < total && time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last = time.Now()
	const width = 30
	n := width * done / max(total, 1)
	fmt.Fprintf(b.w, "\r%-14s [%s%s] %d/%d ", system, strings.Repeat("#", n), strings.Repeat(".", width-n), done, total)
}

func (b *bar) done() {
	if b.tty {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
