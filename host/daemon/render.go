package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// RenderEvent answers one Event of the log with its route decision and its
// rendering for the Work it was routed to: by the running package that
// owns its family and declares render, when that package can read the
// payload's schema, within protocol.RenderDeadline and
// protocol.RenderMaxText; otherwise, or when the package fails,
// generically, saying why. An unknown Event is protocol.ErrNotFound.
func (d *Daemon) RenderEvent(ctx context.Context, id string) (client.EventRender, error) {
	res, work, err := d.renderInput(id)
	if err != nil {
		return client.EventRender{}, err
	}
	owner, why := planRender(d.renderCandidates(), res.Event)
	if owner != "" {
		text, err := d.askRender(ctx, owner, protocol.EventRenderParams{Event: res.Event, Work: work})
		if err == nil {
			res.Text, res.RenderedBy = text, owner
			return res, nil
		}
		why = err.Error()
		d.logger.Warn("event.render fell back to the generic rendering", "extension", owner, "event", id, "reason", why)
	}
	res.Text, res.RenderedBy, res.Fallback = protocol.RenderGeneric(res.Event), client.RenderedGeneric, why
	return res, nil
}

// renderInput reads the Event, its route decision and the Work the
// decision names.
func (d *Daemon) renderInput(id string) (client.EventRender, *protocol.WorkView, error) {
	var (
		res   client.EventRender
		work  *protocol.WorkView
		found bool
	)
	err := d.db.View(func(r *pebblekv.Reader) error {
		ev, ok, err := r.Event(id)
		if err != nil || !ok {
			return err
		}
		found, res.Event = true, ev.Wire()
		res.Route = client.RouteDecision{Event: id, Scope: ev.Scope, State: client.RoutePending}
		dec, decided, err := r.RouteDecision(id)
		if err != nil || !decided {
			return err
		}
		res.Route = decisionView(dec)
		if dec.Work == "" {
			return nil
		}
		w, ok, err := r.Work(dec.Work)
		if ok {
			res.Work = w.ID
			work = &protocol.WorkView{ID: w.ID, Scope: w.Scope, Kind: w.Kind, Keys: w.Keys, State: w.State, Display: w.Display}
		}
		return err
	})
	switch {
	case err != nil:
		return client.EventRender{}, nil, fmt.Errorf("reading Event %s: %w", id, err)
	case !found:
		return client.EventRender{}, nil, protocol.Errorf(protocol.ErrNotFound, "no Event %q in the log; 'open-conduit events list' lists them", id)
	}
	return res, work, nil
}

// renderCandidate is one package as rendering sees it.
type renderCandidate struct {
	manifest *protocol.Manifest
	running  bool
}

// renderCandidates are every package the daemon knows, running or not, so
// a fallback can name an owner that is down.
func (d *Daemon) renderCandidates() []renderCandidate {
	var out []renderCandidate
	for _, x := range d.pkgs.list() {
		if m := d.pkgs.snapshot(x).pkg.Manifest; m != nil {
			out = append(out, renderCandidate{manifest: m, running: d.pkgs.running(x) != nil})
		}
	}
	return out
}

// planRender picks the package to ask for ev: the one declaring its family,
// when it declares render, runs, and can read the payload's schema (the
// gate is the host's, so an unreadable payload never reaches the package).
// Otherwise owner is "" and why says what stood in the way.
func planRender(cands []renderCandidate, ev protocol.Event) (owner, why string) {
	var c *renderCandidate
	for i := range cands {
		if slices.ContainsFunc(cands[i].manifest.Provides.Families, func(f protocol.Family) bool { return f.Name == ev.Type }) {
			c = &cands[i]
			break
		}
	}
	switch {
	case c == nil:
		return "", fmt.Sprintf("no package declares family %q", ev.Type)
	case !c.manifest.Enabled(protocol.MethodEventRender):
		return "", fmt.Sprintf("%s owns family %q but does not render its Events (its manifest does not declare render)", c.manifest.Name, ev.Type)
	case !c.running:
		return "", fmt.Sprintf("%s owns family %q but is not running; 'open-conduit extension list' says why", c.manifest.Name, ev.Type)
	}
	if st := c.manifest.PayloadStatus(ev.Payload.Schema); !st.Readable() {
		return "", fmt.Sprintf("%s does not read payload schema %q (%s), so it was not asked", c.manifest.Name, ev.Payload.Schema, st)
	}
	return c.manifest.Name, ""
}

// askRender calls event.render on owner within protocol.RenderDeadline and
// checks the answer's size; any failure is an error saying why.
func (d *Daemon) askRender(ctx context.Context, owner string, p protocol.EventRenderParams) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, protocol.RenderDeadline)
	defer cancel()
	var res protocol.EventRenderResult
	err := enginePackages{d}.Call(ctx, owner, protocol.MethodEventRender, p, &res)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("%s did not answer event.render within %s", owner, protocol.RenderDeadline)
	case err != nil:
		return "", fmt.Errorf("%s failed to render it: %w", owner, err)
	case len(res.Text) > protocol.RenderMaxText:
		return "", fmt.Errorf("%s's rendering is %d bytes, over the %d-byte limit", owner, len(res.Text), protocol.RenderMaxText)
	case res.Text == "":
		return "", fmt.Errorf("%s answered an empty rendering", owner)
	}
	return res.Text, nil
}
