package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// linkNote is the payload of the linking handler's Events.
type linkNote struct {
	Key   string `json:"key"`
	Title string `json:"title,omitempty"`
	Link  string `json:"link,omitempty"`
	// Again says what the handler does when asked seeing a Work: "fail",
	// "nomatch", or "race" (the Work's display changes meanwhile).
	Again string `json:"again,omitempty"`
}

// linker is a handler that adds the Event's link to the display of the
// Work it is shown (or starts one titled by the Event), and records the
// display each call saw.
type linker struct {
	r    *rig
	mu   sync.Mutex
	saw  []*protocol.Display
	race *protocol.Display
}

func (l *linker) match(p protocol.RouteMatchParams) (protocol.RouteMatchResult, error) {
	var n linkNote
	if err := json.Unmarshal(p.Event.Payload.Data, &n); err != nil {
		return protocol.RouteMatchResult{}, err
	}
	res := protocol.RouteMatchResult{Match: true, Kind: "issue", Keys: []string{n.Key}}
	var base *protocol.Display
	if p.Work != nil {
		base = p.Work.Display
		l.mu.Lock()
		l.saw = append(l.saw, base)
		l.mu.Unlock()
		switch n.Again {
		case "fail":
			return protocol.RouteMatchResult{}, errBroken
		case "nomatch":
			return protocol.RouteMatchResult{Reason: "not when shown a Work"}, nil
		case "race":
			l.changeDisplay(p.Work.ID)
		}
	}
	if n.Link == "" {
		return res, nil
	}
	d := protocol.Display{Title: n.Title}
	if base != nil {
		d = *base
		d.Links = slices.Clone(base.Links)
	}
	if d.Title == "" {
		d.Title = "untitled"
	}
	d.Links = append(d.Links, protocol.Link{Label: n.Link, URL: "https://tracker.example/" + n.Link})
	res.Display = &d
	return res, nil
}

// changeDisplay writes another display on Work id, as if something had
// changed it while the handler answered.
func (l *linker) changeDisplay(id string) {
	err := l.r.db.Update(func(tx *pebblekv.Tx) error {
		w, _, err := tx.Work(id)
		if err != nil {
			return err
		}
		w.Display = l.race
		return tx.PutWork(w)
	})
	if err != nil {
		l.r.t.Errorf("changing Work %s's display: %v", id, err)
	}
}

// labels are a display's link labels.
func labels(d *protocol.Display) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, l := range d.Links {
		out = append(out, l.Label)
	}
	return out
}

// TestMatchSeesTheDisplayItReplaces: a match whose keys reach an open Work
// with a display it was not shown is asked again seeing it, so a handler
// adding a link keeps the links before; Events of one Work apply their
// displays in log order; a match without a display keeps the Work's; a
// second answer that fails or does not match keeps it, and says why.
func TestMatchSeesTheDisplayItReplaces(t *testing.T) {
	pkgs := newFakePackages()
	pkgs.declare("tracker", []protocol.Route{{Handler: "tracker.links"}}, protocol.WorkKind{Kind: "issue"})
	r := newRig(t, pkgs, false, config.Scope{ID: "s", Routes: []config.Route{{Handler: "tracker.links"}}})
	l := &linker{r: r, race: &protocol.Display{Title: "changed meanwhile"}}
	pkgs.setMatch("tracker.links", l.match)

	steps := []struct {
		name  string
		notes []linkNote
		// named says the Events name the Work of key k, as a package's
		// emission about it does.
		named bool
		// calls is how many route.match calls the step's Events took.
		calls   int
		title   string
		links   []string
		refused string
	}{
		{name: "a new Work takes the first display", notes: []linkNote{{Key: "k", Title: "Export fails", Link: "a"}},
			calls: 1, title: "Export fails", links: []string{"a"}},
		{name: "a join sees the display it replaces", notes: []linkNote{{Key: "k", Link: "b"}},
			calls: 2, title: "Export fails", links: []string{"a", "b"}},
		{name: "a match without a display keeps the Work's", notes: []linkNote{{Key: "k"}},
			calls: 2, title: "Export fails", links: []string{"a", "b"}},
		{name: "Events of one Work apply in log order, each seeing the one before",
			notes: []linkNote{{Key: "k", Link: "c"}, {Key: "k", Link: "d"}, {Key: "k", Link: "e"}},
			calls: 6, title: "Export fails", links: []string{"a", "b", "c", "d", "e"}},
		{name: "a second answer that fails keeps the display", notes: []linkNote{{Key: "k", Link: "f", Again: "fail"}},
			calls: 2, title: "Export fails", links: []string{"a", "b", "c", "d", "e"}, refused: "failed"},
		{name: "a second answer without a match keeps the display", notes: []linkNote{{Key: "k", Link: "g", Again: "nomatch"}},
			calls: 2, title: "Export fails", links: []string{"a", "b", "c", "d", "e"}, refused: "did not match"},
		{name: "a display changed after the second answer is kept", notes: []linkNote{{Key: "k", Link: "h", Again: "race"}},
			calls: 2, title: "changed meanwhile", refused: "did not see"},
		{name: "an Event naming its Work is shown it at once", notes: []linkNote{{Key: "k", Link: "n"}}, named: true,
			calls: 1, title: "changed meanwhile", links: []string{"n"}},
		{name: "a Work without a display is not asked about again", notes: []linkNote{{Key: "bare"}, {Key: "bare", Title: "Now titled", Link: "x"}},
			calls: 2, title: "Now titled", links: []string{"x"}},
	}
	var workOfKey string
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := pkgs.called("tracker.links")
			var evs []pebblekv.Event
			for _, n := range st.notes {
				if st.named {
					evs = append(evs, r.acceptNaming(n, workOfKey))
				} else {
					evs = append(evs, r.accept("s", "tracker.issue", n))
				}
			}
			for _, ev := range evs {
				r.routed(ev)
			}
			last := evs[len(evs)-1]
			d, w := r.routed(last)
			workOfKey = w.ID
			if got := pkgs.called("tracker.links") - before; got != st.calls {
				t.Errorf("route.match asked %d times, want %d", got, st.calls)
			}
			if w.Display == nil || w.Display.Title != st.title || !slices.Equal(labels(w.Display), st.links) {
				t.Errorf("Work display %+v, want %q with links %v", w.Display, st.title, st.links)
			}
			if st.refused == "" && d.DisplayRefused != "" || !strings.Contains(d.DisplayRefused, st.refused) {
				t.Errorf("display_refused %q, want %q", d.DisplayRefused, st.refused)
			}
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Each call shown a Work saw, in log order, the display it replaces.
	var seen [][]string
	for _, d := range l.saw {
		seen = append(seen, labels(d))
	}
	want := [][]string{{"a"}, {"a", "b"}, {"a", "b"}, {"a", "b", "c"}, {"a", "b", "c", "d"}, {"a", "b", "c", "d", "e"}, {"a", "b", "c", "d", "e"}, {"a", "b", "c", "d", "e"}, nil}
	if !slices.EqualFunc(seen, want, slices.Equal) {
		t.Errorf("the handler saw %v, want %v", seen, want)
	}
}

// acceptNaming accepts a linkNote Event of scope s that names Work id.
func (r *rig) acceptNaming(n linkNote, id string) pebblekv.Event {
	r.t.Helper()
	raw, err := json.Marshal(n)
	if err != nil {
		r.t.Fatal(err)
	}
	r.n++
	var ev pebblekv.Event
	if err := r.db.Update(func(tx *pebblekv.Tx) (err error) {
		ev, _, err = tx.Accept(pebblekv.EventInput{Scope: "s", Source: "test", Type: "tracker.issue", DeliveryID: fmt.Sprint(r.n),
			Payload: protocol.Payload{Data: raw}, Works: []string{id}}, pebblekv.Limits{})
		return err
	}); err != nil {
		r.t.Fatal(err)
	}
	r.e.Notify()
	return ev
}
