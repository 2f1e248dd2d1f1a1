package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/config"
)

func TestRolesFromFlags(t *testing.T) {
	m, err := config.Parse("fleet.toml", []byte(`
[hosts.a]
command = "x"
[hosts.b]
command = "x"
[supervisors.x]
strategy = "static"
answers = { question = "x" }
[supervisors.y]
strategy = "static"
answers = { question = "y" }
[supervisors.ext]
strategy = "external"
[[routes]]
host = "a"
supervisor = "x"
`))
	if err != nil {
		t.Fatal(err)
	}
	names := func(r roles) string {
		var hs, ss []string
		for h := range r.hosts {
			hs = append(hs, h)
		}
		for _, s := range r.supervisors {
			ss = append(ss, s.Name)
		}
		slices.Sort(hs)
		return strings.Join(hs, ",") + "|" + strings.Join(ss, ",")
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "a,b|x,y"},
		{Options{NoSupervisors: true}, "a,b|"},
		{Options{NoHosts: true}, "|x,y"}, // the route naming host a is fine here
		{Options{Hosts: []string{"b"}, Supervisors: []string{"y"}}, "b|y"},
	} {
		tc.opts.Manifest = m
		r, err := chooseRoles(tc.opts)
		if err != nil || names(r) != tc.want {
			t.Errorf("%+v: %s %v; want %s", tc.opts, names(r), err, tc.want)
		}
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{NoHosts: true, Hosts: []string{"a"}}, "--no-hosts and --hosts a contradict each other"},
		{Options{NoSupervisors: true, Supervisors: []string{"x"}}, "--no-supervisors and --supervisors x contradict each other"},
		{Options{Hosts: []string{"c"}}, `no host "c" in fleet.toml; it has a, b`},
		{Options{Supervisors: []string{"z"}}, `no supervisor "z" in fleet.toml; it has ext, x, y`},
		{Options{Supervisors: []string{"ext"}}, `supervisor "ext" is external: a process outside agentmux serves it`},
	} {
		tc.opts.Manifest = m
		if _, err := chooseRoles(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v; want %q", tc.opts, err, tc.want)
		}
	}
}
