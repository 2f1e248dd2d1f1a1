package node

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/agentmux/agentmux/actors/agent"
	"github.com/agentmux/agentmux/sim"
)

func inprocSim(in io.Reader, out io.Writer) error { return sim.Run(in, out, sim.Options{}) }

func TestInProcAgentsRunLoadPlans(t *testing.T) {
	f := start(t, "[hosts.w]\ncommand = \"unused\"\npool = 4\nquestion_timeout = \"5s\"\n"+`
[supervisors.s]
strategy = "static"
answers = { question = "unit", approval = "yes" }
[supervisors.nobody]
strategy = "external"
[[routes]]
match = "unrouted"
supervisor = "nobody"
[[routes]]
supervisor = "s"
`, func(o *Options) { o.InProc = map[string]agent.InProc{"w": inprocSim} })
	plan := &sim.Load{Progress: 500, Questions: 3, Approvals: 2, Unrouted: 1, Every: sim.Duration(10 * time.Millisecond), DefaultAfter: sim.Duration(200 * time.Millisecond)}
	results := make(chan *agent.Result, 4)
	for range 4 {
		f.n.Submit("w", "", plan.Prompt(), results)
	}
	for range 4 {
		res := <-results
		if !res.OK {
			t.Fatalf("session %+v", res)
		}
		var p struct{ Load sim.LoadReport }
		if err := json.Unmarshal(res.Payload, &p); err != nil {
			t.Fatal(err)
		}
		r := p.Load
		if r.Progress != 500 || len(r.QuestionsUS) != 3 || len(r.ApprovalsUS) != 2 || len(r.LateUS) != 1 || r.Missing != 0 ||
			r.Outcomes["answered"] != 5 || r.Outcomes["timed_out"] != 1 {
			t.Fatalf("load report %+v", r)
		}
		if r.LateUS[0] < 0 {
			t.Fatalf("the default came %dµs before its deadline", -r.LateUS[0])
		}
	}
}
