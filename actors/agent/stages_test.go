package agent

import (
	"testing"

	"github.com/agentmux/agentmux/config"
	"github.com/agentmux/agentmux/protocol"
)

// The stages that only annotate run alone: the routes stage takes the session's own
// route before the manifest's and passes the request on with it; the radar notes no
// conflict for a host without workspaces; a request no earlier attempt answered, no
// session answer and no grant answers passes those stages untouched.
func TestRequestStagesRunAlone(t *testing.T) {
	a := &Agent{host: &config.Host{Name: "w"}, cfg: Config{Env: &Env{}, Routes: config.Routes{{Supervisor: "manifest"}}}}
	msg, err := protocol.Decode([]byte(`{"type":"approval","id":"a1","description":"rm -rf build"}`), protocol.PlainTextResult)
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(routes config.Routes) (*session, *request) {
		s := &session{id: "s-1", start: &StartSession{Session: "s-1", Routes: routes}, open: map[string]*request{}}
		return s, &request{msg: msg, id: "a1"}
	}

	s, p := newSession(config.Routes{{Supervisor: "session"}})
	for _, st := range []stage{{"replayed", (*Agent).replayed}, {"session answers", (*Agent).answeredForSession},
		{"grants", (*Agent).granted}, {"conflict radar", (*Agent).conflicting}, {"routes", (*Agent).routed}} {
		if st.run(a, s, p) {
			t.Fatalf("the %s stage answered a request it has nothing for", st.name)
		}
	}
	if p.route == nil || p.route.Supervisor != "session" {
		t.Errorf("routed by %+v; want the session's own route first", p.route)
	}
	if len(p.conflicts) != 0 || len(s.open) != 0 {
		t.Errorf("conflicts %v, pending %v: the stages that pass on kept nothing", p.conflicts, s.open)
	}

	s, p = newSession(nil)
	if a.routed(s, p) || p.route == nil || p.route.Supervisor != "manifest" {
		t.Errorf("routed by %+v; want the manifest's route when the session has none", p.route)
	}

}

// Every request passes the stages in one order, each named once.
func TestRequestStagesInOrder(t *testing.T) {
	var names []string
	seen := map[string]bool{}
	for _, st := range requestStages() {
		if st.run == nil || seen[st.name] {
			t.Fatalf("stage %q: missing or named twice", st.name)
		}
		seen[st.name] = true
		names = append(names, st.name)
	}
	if names[0] != "published" || names[len(names)-1] != "supervisor" {
		t.Errorf("stages %v: a request is published first and asked of its supervisor last", names)
	}
}
