package pipe

import (
	"io"
	"os"
	"sync"
	"time"
)

// Size is what a Linux pipe holds by default: 64 KiB.
const Size = 64 << 10

// keep is the most buffer an empty pipe keeps for its next bytes; a bigger one, grown
// by a burst, is let go, so that many idle pipes hold little.
const keep = 4 << 10

// pipe is the state a Reader and its Writer share.
type pipe struct {
	size int
	wmu  sync.Mutex // one write at a time, so each write's bytes stay together
	rmu  sync.Mutex // one read at a time

	mu       sync.Mutex // protects the fields below
	buf      []byte     // the unread bytes are buf[off:]
	off      int
	wclosed  bool // reads return io.EOF once the buffer is empty
	rclosed  bool // reads and writes fail with io.ErrClosedPipe
	deadline time.Time

	readable chan struct{} // a token: bytes came, or the writer closed
	writable chan struct{} // a token: room came, or the reader closed
}

// New returns the two ends of a pipe that buffers up to size bytes.
func New(size int) (*Reader, *Writer) {
	p := &pipe{size: size, readable: make(chan struct{}, 1), writable: make(chan struct{}, 1)}
	return &Reader{p}, &Writer{p}
}

// Reader is the read end of a pipe.
type Reader struct{ p *pipe }

// Read reads what is buffered, waiting until there is something. It returns io.EOF
// once the writer has closed and every byte has been read.
func (r *Reader) Read(b []byte) (int, error) {
	p := r.p
	p.rmu.Lock()
	defer p.rmu.Unlock()
	for {
		p.mu.Lock()
		switch {
		case p.rclosed:
			p.mu.Unlock()
			return 0, io.ErrClosedPipe
		case p.off < len(p.buf):
			n := copy(b, p.buf[p.off:])
			p.off += n
			if p.off == len(p.buf) {
				p.off, p.buf = 0, p.buf[:0]
				if cap(p.buf) > keep {
					p.buf = nil
				}
			}
			p.mu.Unlock()
			signal(p.writable)
			return n, nil
		case p.wclosed:
			p.mu.Unlock()
			return 0, io.EOF
		}
		p.mu.Unlock()
		<-p.readable
	}
}

// Close closes the read end: writes fail with io.ErrClosedPipe from now on, and what
// is buffered is dropped. It always returns nil.
func (r *Reader) Close() error {
	p := r.p
	p.mu.Lock()
	p.rclosed, p.buf, p.off = true, nil, 0
	p.mu.Unlock()
	signal(p.writable)
	signal(p.readable)
	return nil
}

// Writer is the write end of a pipe.
type Writer struct{ p *pipe }

// Write buffers b, waiting while the buffer is full. It fails with io.ErrClosedPipe
// once either end is closed, and with os.ErrDeadlineExceeded when the deadline passes
// first; n says how much of b was buffered before.
func (w *Writer) Write(b []byte) (n int, err error) {
	p := w.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		k, deadline, err := p.put(b[n:])
		n += k
		if err != nil || n == len(b) {
			return n, err
		}
		var expired <-chan time.Time
		if !deadline.IsZero() {
			wait := time.Until(deadline)
			if wait <= 0 {
				return n, os.ErrDeadlineExceeded
			}
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			expired = timer.C
		}
		select {
		case <-p.writable:
		case <-expired:
			return n, os.ErrDeadlineExceeded
		}
	}
}

// TryWrite buffers what of b fits without waiting, and nothing while another Write
// waits for room, so that bytes never overtake those written before them. It fails
// with io.ErrClosedPipe once either end is closed.
func (w *Writer) TryWrite(b []byte) (int, error) {
	p := w.p
	if !p.wmu.TryLock() {
		return 0, nil
	}
	defer p.wmu.Unlock()
	n, _, err := p.put(b)
	return n, err
}

// SetWriteDeadline bounds the writes that begin after it, and the waits of one going
// on when it next waits for room. The zero time means no bound.
func (w *Writer) SetWriteDeadline(t time.Time) error {
	w.p.mu.Lock()
	w.p.deadline = t
	w.p.mu.Unlock()
	return nil
}

// Close closes the write end: reads return io.EOF once what is buffered is read.
// It always returns nil.
func (w *Writer) Close() error {
	p := w.p
	p.mu.Lock()
	p.wclosed = true
	p.mu.Unlock()
	signal(p.readable)
	signal(p.writable)
	return nil
}

// put buffers what of b fits, and says until when a write may wait for the rest.
func (p *pipe) put(b []byte) (int, time.Time, error) {
	p.mu.Lock()
	if p.rclosed || p.wclosed {
		p.mu.Unlock()
		return 0, time.Time{}, io.ErrClosedPipe
	}
	if p.off > 0 && len(p.buf)+len(b) > cap(p.buf) {
		p.buf = p.buf[:copy(p.buf, p.buf[p.off:])] // reuse the bytes already read
		p.off = 0
	}
	n := min(len(b), p.size-(len(p.buf)-p.off))
	p.buf = append(p.buf, b[:n]...)
	deadline := p.deadline
	p.mu.Unlock()
	if n > 0 {
		signal(p.readable)
	}
	return n, deadline, nil
}

// signal leaves a token on c unless one is there already: whoever waits on c wakes,
// or the next to wait does not.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
