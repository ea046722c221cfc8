package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// apiGet sends one GET to e's daemon as any HTTP client would, and returns
// the status and the error it answered (when not 2xx).
func apiGet(t *testing.T, e *daemontest.Env, path string) (int, client.Error) {
	t.Helper()
	hc := &http.Client{Timeout: daemontest.Deadline, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", client.SocketPath(e.State))
		},
	}}
	resp, err := hc.Get("http://oc" + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var ce client.Error
	if resp.StatusCode/100 != 2 {
		if err := json.Unmarshal(data, &ce); err != nil {
			t.Fatalf("GET %s: %d %q is not the API's error", path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, ce
}

// emitKeyed emits n manual requests with one key into scope beta and
// returns their Event IDs in order.
func emitKeyed(t *testing.T, e *daemontest.Env, key string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		ev, err := e.C.Emit(t.Context(), client.EmitRequest{Scope: "beta",
			Data: []byte(fmt.Sprintf(`{"title": "request %d", "key": %q}`, i, key))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

// pagedInputs reads every page of a Work's inputs through page, checking
// each page's numbers run on, and returns the Event IDs.
func pagedInputs(t *testing.T, w string, page func(after uint64) client.WorkInputsPage) []string {
	t.Helper()
	var ids []string
	var after uint64
	for range 1000 {
		p := page(after)
		for _, in := range p.Inputs {
			if in.N != after+1 || in.Event.ID == "" || in.Route == nil || in.Route.Work != w {
				t.Fatalf("input after %d: %+v", after, in)
			}
			ids, after = append(ids, in.Event.ID), in.N
		}
		if p.Next == 0 {
			return ids
		}
		if p.Next != after {
			t.Fatalf("next %d after a page ending at %d", p.Next, after)
		}
	}
	t.Fatal("paging did not end")
	return nil
}

func TestWorkInputsPageEveryInputPastTheTailThroughTheAPIAndTheBinary(t *testing.T) {
	const total = pebblekv.WorkTail + 6
	e := daemontest.New(t, bins)
	e.WriteConfig(manualRoutes)
	e.Start()

	want := emitKeyed(t, e, "long", total)
	other := emitKeyed(t, e, "other", 1)
	var route client.RouteDecision
	e.Eventually("every request is routed", func() bool {
		var err error
		route, err = e.C.EventRoute(t.Context(), other[0], 0)
		return err == nil && route.State == client.RouteRouted
	})
	last, err := e.C.EventRoute(t.Context(), want[total-1], 0)
	if err != nil || last.State != client.RouteRouted || last.Created || last.Work == route.Work {
		t.Fatalf("the last request: %+v %v", last, err)
	}
	w := last.Work

	t.Run("client pages", func(t *testing.T) {
		got := pagedInputs(t, w, func(after uint64) client.WorkInputsPage {
			p, err := e.C.WorkInputs(t.Context(), w, client.WorkInputsQuery{After: after, Limit: 25})
			if err != nil || p.InputCount != total || p.Work != w {
				t.Fatalf("page after %d: %+v %v", after, p, err)
			}
			return p
		})
		if !slices.Equal(got, want) {
			t.Errorf("the pages hold %d inputs, want the %d emitted in order", len(got), total)
		}
	})
	t.Run("binary pages", func(t *testing.T) {
		got := pagedInputs(t, w, func(after uint64) client.WorkInputsPage {
			var p client.WorkInputsPage
			cliJSON(t, e, &p, "work", "inputs", w, "--limit", "30", "--after", strconv.FormatUint(after, 10))
			return p
		})
		if !slices.Equal(got, want) {
			t.Errorf("the pages hold %d inputs, want the %d emitted in order", len(got), total)
		}
		code, out, errs := cli(t, e, "work", "inputs", w, "--limit", "30")
		if code != 0 || !strings.Contains(out, fmt.Sprintf("inputs 1-30 of %d", total)) ||
			!strings.Contains(out, "more: open-conduit work inputs "+w+" --after 30 --limit 30 --state ") {
			t.Errorf("the table: %d %s %s", code, out, errs)
		}
	})
	t.Run("show keeps the tail and counts", func(t *testing.T) {
		var show client.WorkDetail
		cliJSON(t, e, &show, "work", "show", w)
		if show.Work.InputCount != total || !slices.Equal(show.Work.Inputs, want[total-pebblekv.WorkTail:]) ||
			len(show.Inputs) != pebblekv.WorkTail || show.Omitted != total-pebblekv.WorkTail ||
			show.Inputs[0].N != total-pebblekv.WorkTail+1 {
			t.Errorf("work show: count %d, %d IDs, %d inputs shown from %d, %d omitted",
				show.Work.InputCount, len(show.Work.Inputs), len(show.Inputs), show.Inputs[0].N, show.Omitted)
		}
		code, out, _ := cli(t, e, "work", "show", w)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("%d inputs (last %d shown", total, pebblekv.WorkTail)) {
			t.Errorf("the show table: %d %s", code, out)
		}
		// Negative control: the other Work shows its one input whole.
		code, out, _ = cli(t, e, "work", "show", route.Work)
		if code != 0 || strings.Contains(out, "shown") {
			t.Errorf("the other Work's show table: %d %s", code, out)
		}
	})
	t.Run("a page stops at its bytes", func(t *testing.T) {
		// Three inputs of 1.5 MiB each: two fit a page's bytes, the third
		// begins the next.
		blob := strings.Repeat("b", 3<<19)
		var big []string
		for range 3 {
			ev, err := e.C.Emit(t.Context(), client.EmitRequest{Scope: "beta", Data: []byte(`{"key": "big", "blob": "` + blob + `"}`)})
			if err != nil {
				t.Fatal(err)
			}
			big = append(big, ev.ID)
		}
		var r client.RouteDecision
		e.Eventually("the big requests are routed", func() bool {
			var err error
			r, err = e.C.EventRoute(t.Context(), big[2], 0)
			return err == nil && r.State == client.RouteRouted
		})
		var sizes []int
		got := pagedInputs(t, r.Work, func(after uint64) client.WorkInputsPage {
			p, err := e.C.WorkInputs(t.Context(), r.Work, client.WorkInputsQuery{After: after})
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(p.Inputs))
			return p
		})
		if !slices.Equal(got, big) || !slices.Equal(sizes, []int{2, 1}) {
			t.Errorf("pages of %v holding %d inputs, want [2 1] holding the 3", sizes, len(got))
		}
	})
	t.Run("bad input is refused naming it", func(t *testing.T) {
		for _, tc := range []struct {
			query, says string
		}{
			{"after=x", "after must be a non-negative integer"},
			{"after=-3", "after must be a non-negative integer"},
			{"limit=0", "limit must be between 1 and 1000"},
			{"limit=5000", "limit must be between 1 and 1000"},
		} {
			status, ce := apiGet(t, e, "/v1/work/"+w+"/inputs?"+tc.query)
			if status != http.StatusBadRequest || ce.Code != protocol.CodeInvalid || !strings.Contains(ce.Message, tc.says) {
				t.Errorf("?%s: %d %+v, want 400 invalid saying %q", tc.query, status, ce, tc.says)
			}
		}
		if status, ce := apiGet(t, e, "/v1/work/w_nosuch/inputs"); status != http.StatusNotFound || !strings.Contains(ce.Message, "work list") {
			t.Errorf("an unknown Work: %d %+v", status, ce)
		}
		if code, _, errs := cli(t, e, "work", "inputs", w, "--limit", "0"); code == 0 || !strings.Contains(errs, "--limit") {
			t.Errorf("--limit 0: %d %q", code, errs)
		}
		if code, _, errs := cli(t, e, "work", "inputs", w, "--after", "-1"); code == 0 || !strings.Contains(errs, "--after") {
			t.Errorf("--after -1: %d %q", code, errs)
		}
	})
}
