//go:build linux

package sandbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// netRulesKept is how many sets of denied ports a NetRules keeps built.
const netRulesKept = 4

// NetRules builds the Landlock ruleset that denies a set of TCP ports (it allows every
// other: 65,533 rules, about 90 ms of CPU) once for all the sandboxes that share it (a
// node's, and their sessions'), which stack it on their own. It keeps the last few sets
// built; Close lets them go.
type NetRules struct {
	mu   sync.Mutex
	sets []*netRuleset // newest last
}

type netRuleset struct {
	key   string
	fd    int
	flags uint32
	users int  // threads restricting themselves with it now
	gone  bool // evicted: closed once its users are done
}

// NewNetRules returns rules to share between sandboxes.
func NewNetRules() *NetRules { return &NetRules{} }

// acquire returns the ruleset denying ports (sorted), built if it is not; release it
// once restricted. A kernel without network rules (ABI < 4) gets nil.
func (r *NetRules) acquire(ports []uint16) (*netRuleset, error) {
	if len(ports) == 0 || ABI() < 4 {
		return nil, nil
	}
	key := portsKey(ports)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sets {
		if s.key == key {
			s.users++
			return s, nil
		}
	}
	// Any layer denies linking and renaming across directories (the refer right) unless
	// it grants it: this one grants it everywhere, and leaves it to the sandbox's own.
	rules := make([]landlock.Rule, 0, 65536)
	rules = append(rules, landlock.PathAccess(ll.AccessFSRefer, "/"))
	for port := 1; port <= 65535; port++ {
		if _, denied := slices.BinarySearch(ports, uint16(port)); !denied {
			rules = append(rules, landlock.ConnectTCP(uint16(port)))
		}
	}
	cfg := landlock.Config{HandledAccessFS: ll.AccessFSRefer, HandledAccessNet: ll.AccessNetConnectTCP}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("landlock network ruleset: %w", err)
	}
	if fd < 0 {
		return nil, nil
	}
	s := &netRuleset{key: key, fd: fd, flags: flags, users: 1}
	r.sets = append(r.sets, s)
	if len(r.sets) > netRulesKept {
		r.evict(r.sets[0])
		r.sets = r.sets[1:]
	}
	return s, nil
}

// release says one thread is done with s.
func (r *NetRules) release(s *netRuleset) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.users--
	if s.gone && s.users == 0 {
		unix.Close(s.fd)
	}
}

// evict closes s, or has its last user close it; callers hold mu.
func (r *NetRules) evict(s *netRuleset) {
	s.gone = true
	if s.users == 0 {
		unix.Close(s.fd)
	}
}

// Close lets every ruleset go. A nil NetRules has none.
func (r *NetRules) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sets {
		r.evict(s)
	}
	r.sets = nil
}

func portsKey(ports []uint16) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(strconv.Itoa(int(p)))
		b.WriteByte(',')
	}
	return b.String()
}
