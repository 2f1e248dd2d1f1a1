package invariants

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/agentmux/agentmux/wire"
)

// Violations lists how records break the invariants:
//
//   - I1/I4: in every attempt that ended, each request has exactly one answer (answered,
//     timed out, cancelled or invalid), and no answer is to a request it never asked
//     (an answer that carries its request, Asked, stands for both);
//   - each attempt starts at most once and ends at most once, and never ends unstarted;
//   - each task of ended ends ok exactly once across its attempts (the attempt chain).
//
// An attempt cut short by a killed node may lack its last records: its node died with
// them, and the task ran again as a new attempt.
func Violations(records []wire.AuditRecord, ended []string) []string {
	type attempt struct {
		started, ended int
		asked, answers map[string]int // by request id
	}
	attempts := map[string]*attempt{}
	ok := map[string]int{}
	for _, r := range records {
		key := r.Session + "#" + strconv.Itoa(r.Attempt)
		a := attempts[key]
		if a == nil {
			a = &attempt{asked: map[string]int{}, answers: map[string]int{}}
			attempts[key] = a
		}
		switch r.Kind {
		case "session.started":
			a.started++
		case "session.ended":
			a.ended++
			if r.Outcome == "ok" {
				ok[r.Session]++
			}
		case "request":
			a.asked[r.Request]++
		case "answer":
			a.answers[r.Request]++
			if r.Asked != 0 {
				a.asked[r.Request]++ // the answer is the request's one record
			}
		}
	}
	var out []string
	for key, a := range attempts {
		if a.started > 1 || a.ended > 1 || (a.ended == 1 && a.started == 0) {
			out = append(out, fmt.Sprintf("%s: started %d times, ended %d times; want once each at most, ended only if started", key, a.started, a.ended))
		}
		if a.ended == 0 {
			continue
		}
		for id, n := range a.answers {
			if a.asked[id] == 0 {
				out = append(out, fmt.Sprintf("%s: %d answers to request %s, which it never asked", key, n, id))
			}
		}
		for id, n := range a.asked {
			if a.answers[id] != n {
				out = append(out, fmt.Sprintf("%s: request %s asked %d times, answered %d times; want one answer each", key, id, n, a.answers[id]))
			}
		}
	}
	for _, id := range ended {
		if ok[id] != 1 {
			out = append(out, fmt.Sprintf("task %s ended ok %d times across its attempts; want exactly once", id, ok[id]))
		}
	}
	slices.Sort(out)
	return out
}
