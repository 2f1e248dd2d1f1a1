package bus

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// How long the embedded server gets to open its listeners, and how often it is looked at
// meanwhile. A loaded machine can take seconds; a port taken fails at once.
const (
	readyTimeout = 30 * time.Second
	readyPoll    = 100 * time.Millisecond
)

// serverLog passes the embedded NATS server's log to the node's: its warnings and
// errors as warnings, its fatal errors as errors, its notices at debug. It keeps the
// first fatal error: why a server did not become ready (a listener it could not open).
// Warnings that tell nothing the node does not say itself are passed at debug (quiet).
type serverLog struct {
	log *slog.Logger

	mu    sync.Mutex // protects fatal
	fatal string
}

func newServerLog(log *slog.Logger) *serverLog {
	return &serverLog{log: log.With("lib", "nats-server")}
}

func (l *serverLog) Noticef(format string, v ...any) { l.debug(format, v...) }
func (l *serverLog) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if quiet(msg) {
		l.debug("%s", msg)
		return
	}
	l.log.Warn(msg)
}
func (l *serverLog) Errorf(format string, v ...any) { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *serverLog) Debugf(format string, v ...any) { l.debug(format, v...) }
func (l *serverLog) Tracef(string, ...any)          {}

func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error(msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == "" {
		l.fatal = msg
	}
}

// debug formats only what a debug log would show.
func (l *serverLog) debug(format string, v ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, v...))
	}
}

// quiet reports a warning of the server's passed at debug. The node's users come from
// its environment, never from a file, so "plaintext passwords" is no advice; a node that
// waits for its cluster says so once, where the server says it every 2 s.
func quiet(warning string) bool {
	return strings.HasPrefix(warning, "Plaintext passwords detected") ||
		strings.HasPrefix(warning, "Waiting for routing to be established")
}

// failed is the server's first fatal error, or "".
func (l *serverLog) failed() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// ready waits until the embedded server accepts clients, it reports a fatal error (then
// at once: a listener it could not open stays unopened), or readyTimeout passes.
func ready(srv *server.Server, log *serverLog) error {
	deadline := time.Now().Add(readyTimeout)
	for !srv.ReadyForConnections(readyPoll) {
		if fatal := log.failed(); fatal != "" {
			return fmt.Errorf("%w: %s; check the manifest's [nats] and [nats.cluster]", ErrNotReady, fatal)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w within %v, and it reported no error; is the machine overloaded?", ErrNotReady, readyTimeout)
		}
	}
	return nil
}
