package console

import (
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Wrong sign-ins are throttled per client address and account, and all together, so a
// token cannot be guessed at network speed: signInBurst tries at once, then one per
// signInEvery; all clients together signInTotal a minute. A right token is let in.
const (
	signInBurst = 5
	signInEvery = 10 * time.Second
	signInTotal = 60
	// throttleIdle is how long an address's limiter is kept after its last try.
	throttleIdle = 10 * time.Minute
)

// throttle limits sign-in tries.
type throttle struct {
	mu    sync.Mutex // protects peers
	peers map[string]*peer
	all   *rate.Limiter
}

// peer is one client address's tries.
type peer struct {
	limit *rate.Limiter
	last  time.Time
}

func newThrottle() *throttle {
	return &throttle{peers: map[string]*peer{}, all: rate.NewLimiter(rate.Every(time.Minute/signInTotal), signInTotal)}
}

// allow takes a try for the client at remote (host:port, and the account it tries
// after a space) now, or reports how long it must wait for one.
func (t *throttle) allow(remote string, now time.Time) (bool, time.Duration) {
	addr, account, _ := strings.Cut(remote, " ")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host += " " + account
	t.mu.Lock()
	defer t.mu.Unlock()
	for h, p := range t.peers {
		if now.Sub(p.last) > throttleIdle {
			delete(t.peers, h)
		}
	}
	p := t.peers[host]
	if p == nil {
		p = &peer{limit: rate.NewLimiter(rate.Every(signInEvery), signInBurst)}
		t.peers[host] = p
	}
	p.last = now
	if r := p.limit.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		wait := r.DelayFrom(now)
		r.CancelAt(now)
		return false, wait
	}
	if r := t.all.ReserveN(now, 1); r.DelayFrom(now) > 0 {
		wait := r.DelayFrom(now)
		r.CancelAt(now)
		return false, wait
	}
	return true, 0
}
