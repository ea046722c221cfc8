package config

import (
	"slices"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
)

// TestDefaultDemoSchedulesAJobAndRoutesItsRuns: with a package declaring
// the schedule type and handler, the demo's schedule entry has a job every
// 30 seconds and a route after the manual one sends its Events on; without
// one, the demo has neither (the negative control), and it checks clean.
func TestDefaultDemoSchedulesAJobAndRoutesItsRuns(t *testing.T) {
	sched := &protocol.Manifest{Name: "schedule", Protocol: protocol.Versions, Command: []string{"x"}, Provides: protocol.Provides{
		Extensions: []protocol.ExtensionType{{Type: "schedule"}},
		Routes:     []protocol.Route{{Handler: "schedule"}},
	}}
	cases := []struct {
		name      string
		pkgs      []*protocol.Manifest
		wantEntry string
		wantRoute bool
	}{
		{"with the schedule package", []*protocol.Manifest{sched}, `{"jobs":[{"name":"demo-tick","cron":"@every 30s"}]}`, true},
		{"without it", nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default(c.pkgs)
			s := cfg.Scopes[0]
			got := ""
			for _, e := range s.Entries {
				if e.Type == "schedule" {
					got = string(e.Config)
				}
			}
			if got != c.wantEntry {
				t.Errorf("schedule entry config %q, want %q", got, c.wantEntry)
			}
			routed := len(s.Routes) == 2 && s.Routes[0].Handler == ManualHandler && s.Routes[1].Handler == "schedule" && s.Routes[1].Binding == DefaultScope
			if routed != c.wantRoute || (!c.wantRoute && len(s.Routes) != 1) {
				t.Errorf("routes %+v, want the schedule route after the manual one: %v", s.Routes, c.wantRoute)
			}
			if ps := Check(cfg, c.pkgs); len(ps) != 0 {
				t.Errorf("the demo has problems:\n%v", ps)
			}
		})
	}
}

// TestDefaultDemoRoutesEachBundledHandlerInOrder: with the schedule, notes
// and webhook packages, the demo routes to each handler after the manual
// route, in that order, on the demo's binding, and checks clean.
func TestDefaultDemoRoutesEachBundledHandlerInOrder(t *testing.T) {
	var pkgs []*protocol.Manifest
	for _, name := range []string{"webhook", "notes", "schedule"} {
		pkgs = append(pkgs, &protocol.Manifest{Name: name, Protocol: protocol.Versions, Command: []string{"x"}, Provides: protocol.Provides{
			Extensions: []protocol.ExtensionType{{Type: name}},
			Routes:     []protocol.Route{{Handler: name}},
		}})
	}
	s := Default(pkgs).Scopes[0]
	var got []string
	for _, r := range s.Routes {
		if r.Binding != DefaultScope {
			t.Errorf("route %+v is not on the demo binding", r)
		}
		got = append(got, r.Handler)
	}
	if want := []string{ManualHandler, "schedule", "notes", "webhook"}; !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	if ps := Check(Default(pkgs), pkgs); len(ps) != 0 {
		t.Errorf("the demo has problems:\n%v", ps)
	}
}
