package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/webhook"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestRealBinaryRendersAnEventByItsOwnerOrGenericallySayingWhy: through
// the real daemon and its API, a webhook delivery is rendered by the
// webhook package for the Work it was routed to; an Event of a family
// nobody renders, and an Event whose owner errs, times out or answers too
// much, are rendered generically with the reason; an unknown Event is
// not_found. The CLI's events show says the same, as text and as JSON.
func TestRealBinaryRendersAnEventByItsOwnerOrGenericallySayingWhy(t *testing.T) {
	e, base := startWebhooks(t)
	ctx := context.Background()
	body := `{"issue":{"id":136,"title":"The export fails"}}`
	if got := postHook(t, base, body, webhook.Sign(hookSecret, []byte(body)), "d-render"); got != http.StatusAccepted {
		t.Fatalf("a signed request: status %d\n%s", got, e.Log)
	}
	hook := hookEvents(t, e)[0]
	e.Eventually("the delivery routed", func() bool {
		d, err := e.C.EventRoute(ctx, hook.ID, 0)
		return err == nil && d.State == client.RouteRouted
	})
	emit := func(typ, data string) string {
		t.Helper()
		ev, err := e.C.Emit(ctx, client.EmitRequest{Scope: "acme", Type: typ, Data: jsontext.Value(data)})
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	cases := []struct {
		name     string
		id       string
		by       string
		text     []string
		fallback string
	}{
		{"the owner renders its delivery for its Work", hook.ID, webhook.Name,
			[]string{"**The export fails**", "- key: 136", "- delivery: d-render"}, ""},
		{"a family nobody owns is generic", emit("manual.request", `{"note":"hello"}`), client.RenderedGeneric,
			[]string{"manual.request from operator", `"note": "hello"`}, `no package declares family "manual.request"`},
		{"the probe renders its own family", emit("probe.seen", `{"n":1}`), probe.Name,
			[]string{probe.RenderPrefix + `{"n":1}`}, ""},
		{"an owner's error falls back", emit("probe.seen", `{"render":"error"}`), client.RenderedGeneric,
			[]string{"probe.seen from operator", `"render": "error"`}, "probe failed to render it"},
		{"an answer over the limit falls back", emit("probe.seen", `{"render":"huge"}`), client.RenderedGeneric,
			[]string{"probe.seen from operator"}, "render at most 65536"},
		{"an owner that does not answer in time falls back", emit("probe.seen", `{"render":"slow"}`), client.RenderedGeneric,
			[]string{"probe.seen from operator"}, "did not answer event.render within " + protocol.RenderDeadline.String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.C.RenderEvent(ctx, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Event.ID != tc.id || r.RenderedBy != tc.by || (tc.fallback == "") != (r.Fallback == "") || !strings.Contains(r.Fallback, tc.fallback) {
				t.Fatalf("rendered by %q with fallback %q; want %q and %q\n%s", r.RenderedBy, r.Fallback, tc.by, tc.fallback, r.Text)
			}
			for _, w := range tc.text {
				if !strings.Contains(r.Text, w) {
					t.Errorf("the rendering lacks %q:\n%s", w, r.Text)
				}
			}
			if len(r.Text) > protocol.RenderMaxText {
				t.Errorf("the rendering is %d bytes", len(r.Text))
			}
		})
	}
	if r, err := e.C.RenderEvent(ctx, hook.ID); err != nil || r.Work == "" || r.Route.State != client.RouteRouted || r.Route.Work != r.Work {
		t.Fatalf("the delivery's Work and route: %+v, %v", r, err)
	}
	var ce *client.Error
	if _, err := e.C.RenderEvent(ctx, "e_nope"); !errors.As(err, &ce) || ce.Code != protocol.CodeNotFound || !strings.Contains(err.Error(), "events list") {
		t.Fatalf("an unknown Event: %v, want not_found saying how to list them", err)
	}

	// The CLI says the same.
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(e.Bins.OpenConduit, append(append([]string{"events", "show"}, args...), "--state", e.State)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errs, code := cli(hook.ID)
	if code != 0 || !strings.Contains(out, "rendered by webhook") || !strings.Contains(out, "**The export fails**") ||
		!strings.Contains(out, "routed by route 0 (webhook): created") {
		t.Fatalf("events show %s: %d\n%s%s", hook.ID, code, out, errs)
	}
	out, errs, code = cli(cases[1].id, "--json")
	var v client.EventRender
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.RenderedBy != client.RenderedGeneric ||
		!strings.Contains(v.Fallback, "manual.request") || v.Event.ID != cases[1].id {
		t.Fatalf("events show --json: %d %+v\n%s%s", code, v, out, errs)
	}
	out, errs, code = cli("e_nope")
	if code != 1 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `no Event "e_nope" in the log`) {
		t.Fatalf("events show of an unknown Event: %d %q %q", code, out, errs)
	}
}
