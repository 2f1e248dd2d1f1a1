package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Load is an open-loop plan for one session, used by the load generator: every line is
// sent at its scheduled time whether or not earlier requests were answered, and each
// request's latency is measured from that intended time.
type Load struct {
	Progress     int      `json:"progress"`      // progress lines
	ProgressRate float64  `json:"progress_rate"` // lines per second; 0: back to back
	Questions    int      `json:"questions"`
	Approvals    int      `json:"approvals"`
	Every        Duration `json:"every"` // between requests; the first one after Every
	// Unrouted questions go to a supervisor nobody runs: their default comes at
	// DefaultAfter (their timeout_ms), and how late it came is measured.
	Unrouted     int      `json:"unrouted"`
	DefaultAfter Duration `json:"default_after"`
	Hold         Duration `json:"hold"` // stay in the session this long after the last line (idle sessions)
	// Checkpoints are checkpoint lines, one after each request, each with a state of
	// CheckpointBytes.
	Checkpoints     int `json:"checkpoints"`
	CheckpointBytes int `json:"checkpoint_bytes"`
}

// LoadReport is what a load session reports in its result, under "load".
type LoadReport struct {
	Progress      int            `json:"progress"`
	QuestionsUS   []int64        `json:"questions_us"` // answer latency from the intended send time
	ApprovalsUS   []int64        `json:"approvals_us"`
	LateUS        []int64        `json:"late_us"`    // unrouted: arrival after the deadline
	LagUS         []int64        `json:"lag_us"`     // how late each request was sent
	LagMaxUS      int64          `json:"lag_max_us"` // the latest any line was sent
	Outcomes      map[string]int `json:"outcomes"`
	Missing       int            `json:"missing"` // requests never answered
	StartNS       int64          `json:"start_ns"`
	ProgressEndNS int64          `json:"progress_end_ns"`       // when the last progress line was written
	ReceivedNS    int64          `json:"received_ns,omitempty"` // set by whoever reads the result: when it did
	EndNS         int64          `json:"end_ns"`
	sent          map[string]event
	defaultAfter  time.Duration
}

type event struct {
	at   time.Time
	kind byte // 'p' progress, 'q' question, 'a' approval, 'u' unrouted
	n    int
}

// parseLoad reads a {"load": {...}} prompt.
func parseLoad(prompt string) (*Load, bool) {
	if !strings.HasPrefix(strings.TrimSpace(prompt), `{"load"`) {
		return nil, false
	}
	var p struct {
		Load *Load `json:"load"`
	}
	if json.Unmarshal([]byte(prompt), &p) != nil || p.Load == nil {
		return nil, false
	}
	return p.Load, true
}

// Prompt is the prompt that runs l.
func (l *Load) Prompt() string {
	b, _ := json.Marshal(map[string]*Load{"load": l})
	return string(b)
}

// schedule lists every line of the plan at its intended time, in time order.
func (l *Load) schedule(t0 time.Time) []event {
	var evs []event
	for i := range l.Progress {
		at := t0
		if l.ProgressRate > 0 {
			at = t0.Add(time.Duration(float64(i) / l.ProgressRate * float64(time.Second)))
		}
		evs = append(evs, event{at: at, kind: 'p', n: i})
	}
	j := 0
	add := func(kind byte, count int) {
		for i := range count {
			j++
			evs = append(evs, event{at: t0.Add(time.Duration(j) * time.Duration(l.Every)), kind: kind, n: i + 1})
		}
	}
	add('q', l.Questions)
	add('a', l.Approvals)
	add('u', l.Unrouted)
	for i := range l.Checkpoints { // each just after a request: written while it waits
		evs = append(evs, event{at: t0.Add(time.Duration(i+1)*time.Duration(l.Every) + time.Microsecond), kind: 'c', n: i + 1})
	}
	slices.SortStableFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	return evs
}

// load runs plan as one session and sends its report as the result.
func (a *agent) load(plan *Load) error {
	t0 := time.Now()
	rep := &LoadReport{Outcomes: map[string]int{}, sent: map[string]event{}, StartNS: t0.UnixNano(), defaultAfter: time.Duration(plan.DefaultAfter)}
	evs := plan.schedule(t0)
	expected := plan.Questions + plan.Approvals + plan.Unrouted
	answered := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	// Lines due together go out in one write, as a busy agent's do; a request, and
	// anything before a wait, is flushed at once.
	out := bufio.NewWriterSize(a.out, 64<<10)
	flush := func() {
		if err := out.Flush(); err != nil && a.werr == nil {
			a.werr = fmt.Errorf("sim: stdout: %w", err)
		}
	}
	var line []byte
	for i := 0; i < len(evs) || answered < expected; {
		if i < len(evs) {
			if wait := time.Until(evs[i].at); wait > 0 {
				flush()
				timer.Reset(wait)
				if err := a.loadReceive(rep, timer.C, &answered); err != nil {
					return err
				}
				continue
			}
			e := evs[i]
			line = append(appendLoadLine(line[:0], e, plan), '\n')
			if _, err := out.Write(line); err != nil {
				return fmt.Errorf("sim: stdout: %w", err)
			}
			if e.kind != 'p' || i+1 == len(evs) {
				flush()
			}
			if a.werr != nil {
				return a.werr
			}
			if e.kind == 'p' {
				rep.Progress++
				if rep.Progress%16 == 1 || rep.Progress == plan.Progress { // the clock is dear at a million lines a second
					now := time.Now()
					rep.LagMaxUS = max(rep.LagMaxUS, now.Sub(e.at).Microseconds())
					rep.ProgressEndNS = now.UnixNano()
				}
			} else if e.kind != 'c' { // a request
				lag := time.Since(e.at).Microseconds()
				rep.LagMaxUS = max(rep.LagMaxUS, lag)
				rep.LagUS = append(rep.LagUS, lag)
				rep.sent[loadID(e)] = e
			}
			i++
			continue
		}
		flush()
		if err := a.loadReceive(rep, nil, &answered); err != nil {
			return err
		}
	}
	flush()
	if plan.Hold > 0 {
		timer.Reset(time.Duration(plan.Hold))
		for held := false; !held; {
			select {
			case <-timer.C:
				held = true
			case m := <-a.lines:
				if m.finished {
					if m.readErr != nil {
						return m.readErr
					}
					// The one end-of-input the reader sends: returning nil would leave Run
					// waiting for a next line that never comes.
					return fmt.Errorf("sim: stdin closed while holding a load session")
				}
			}
		}
	}
	rep.EndNS = time.Now().UnixNano()
	rep.Missing = expected - answered
	a.write(map[string]any{"type": "result", "text": "load", "load": rep})
	return a.werr
}

// loadReceive handles incoming lines until tick fires (or one line, when tick is nil).
func (a *agent) loadReceive(rep *LoadReport, tick <-chan time.Time, answered *int) error {
	for {
		select {
		case <-tick:
			return nil
		case m := <-a.lines:
			if m.finished {
				if m.readErr != nil {
					return m.readErr
				}
				return fmt.Errorf("sim: stdin closed during a load session")
			}
			if m.Type == "response" {
				a.loadAnswer(rep, m, answered)
			}
			if tick == nil {
				return nil
			}
		}
	}
}

func (a *agent) loadAnswer(rep *LoadReport, m *incoming, answered *int) {
	e, ok := rep.sent[m.ID]
	if !ok {
		return
	}
	delete(rep.sent, m.ID)
	*answered++
	rep.Outcomes[m.Outcome]++
	us := time.Since(e.at).Microseconds()
	switch e.kind {
	case 'q':
		rep.QuestionsUS = append(rep.QuestionsUS, us)
	case 'a':
		rep.ApprovalsUS = append(rep.ApprovalsUS, us)
	case 'u':
		rep.LateUS = append(rep.LateUS, us-rep.defaultAfter.Microseconds())
	}
}

func loadID(e event) string { return fmt.Sprintf("%c%d", e.kind, e.n) }

// appendLoadLine is one scheduled line, built without encoding/json.
func appendLoadLine(dst []byte, e event, plan *Load) []byte {
	switch e.kind {
	case 'p':
		return fmt.Appendf(dst, `{"type":"progress","message":"step %d","percent":%d}`, e.n, 100*e.n/max(plan.Progress, 1))
	case 'q':
		return fmt.Appendf(dst, `{"type":"question","id":"q%d","kind":"select","question":"Which suite should run for change %d?","options":["unit","e2e"]}`, e.n, e.n)
	case 'a':
		return fmt.Appendf(dst, `{"type":"approval","id":"a%d","description":"run make test for change %d"}`, e.n, e.n)
	case 'c':
		dst = fmt.Appendf(dst, `{"type":"checkpoint","state":{"step":%d,"notes":"`, e.n)
		for range plan.CheckpointBytes {
			dst = append(dst, 'x')
		}
		return append(dst, `"}}`...)
	default:
		return fmt.Appendf(dst, `{"type":"question","id":"u%d","question":"[unrouted] anyone there? %d","timeout_ms":%d}`, e.n, e.n, time.Duration(plan.DefaultAfter).Milliseconds())
	}
}
