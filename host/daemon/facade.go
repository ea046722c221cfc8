package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// callTimeout bounds an operator's call of an operation.
const callTimeout = time.Minute

// Status is the daemon's own state.
func (d *Daemon) Status() client.Status {
	st := client.Status{
		Version: d.opts.Version, PID: os.Getpid(), Started: d.started, State: d.opts.StateDir,
		Phase: d.Phase(), ConfigFile: d.opts.ConfigFile,
	}
	if g := d.gen.Load(); g != nil {
		st.Config, st.Generation, st.Hash = sourceName(g.Source), g.ID, g.Hash
	}
	if a := d.webhookAddr.Load(); a != nil {
		st.Webhooks = *a
	}
	for _, x := range d.pkgs.list() {
		st.Extensions++
		if d.pkgs.running(x) != nil {
			st.Running++
		}
	}
	return st
}

// Call lets the operator call a package's handler operation, as the caller
// "operator", in a scope. The authority is checked before the handler runs,
// so a refused call changes nothing: the scope must be configured, use the
// package and be enabled. With no scope the call acts in none.
func (d *Daemon) Call(ctx context.Context, name string, req client.CallRequest) (client.CallResult, error) {
	g := d.gen.Load()
	if g == nil || d.Phase() != client.PhaseRunning {
		return client.CallResult{}, errStarting()
	}
	x, ok := d.pkgs.get(name)
	if !ok {
		return client.CallResult{}, errUnknownExtension(name)
	}
	snap := d.pkgs.snapshot(x)
	m := snap.pkg.Manifest
	if op, ok := m.Operation(req.Operation); !ok || op.Kind != protocol.OperationHandler {
		return client.CallResult{}, protocol.Errorf(protocol.ErrUndeclared, "%s declares no handler operation %q", name, req.Operation)
	}
	if req.Scope != "" {
		sc, ok := g.Config.Scope(req.Scope)
		switch {
		case !ok:
			return client.CallResult{}, protocol.Errorf(protocol.ErrNotFound, "scope %q is not configured; 'open-conduit config show' lists the scopes", req.Scope)
		case !g.For(m).Uses(req.Scope):
			return client.CallResult{}, protocol.Errorf(protocol.ErrNotFound, "scope %q does not use %s: add an entry of its types to the scope, or call it in a scope that uses it", req.Scope, name)
		case sc.Disabled:
			return client.CallResult{}, protocol.Errorf(protocol.ErrInvalid, "scope %q is disabled, so nothing new runs in it; enable it in the config first", req.Scope)
		}
	}
	s := d.pkgs.running(x)
	if s == nil {
		return client.CallResult{}, protocol.Errorf(protocol.ErrUnavailable, "%s", notRunning(name, snap))
	}
	input := []byte("{}")
	if req.Input != nil {
		var err error
		if input, err = json.Marshal(req.Input); err != nil {
			return client.CallResult{}, protocol.Errorf(protocol.ErrInvalid, "the input is not JSON: %v", err)
		}
	}
	if req.RequestID == "" {
		req.RequestID = fmt.Sprintf("operator-%d", time.Now().UnixNano())
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := session.Invoke(ctx, s, protocol.OperationCall, protocol.OperationCallParams{
		Operation: req.Operation, Input: protocol.Payload{Data: input},
		Authority: protocol.Authority{Scope: req.Scope, Caller: "operator"}, RequestID: req.RequestID,
	})
	if err != nil {
		return client.CallResult{Code: codeOr(err, protocol.CodeInternal), Message: err.Error()}, nil
	}
	return client.CallResult{Output: res.Output}, nil
}

// Events reads one page of the log after a cursor: at most q.Limit Events
// and, past the first, at most protocol.MaxPageBytes of them, the paging
// rule of every answer (protocol.PageBudget). A reader reads on while a
// page's next is below latest. With q.Wait, an empty page waits for the log
// to grow (a long poll).
func (d *Daemon) Events(ctx context.Context, q client.EventsQuery) (client.Events, error) {
	limit := q.Limit
	if limit <= 0 || limit > protocol.StateEventsMax {
		limit = protocol.StateEventsMax
	}
	var deadline <-chan time.Time
	if q.Wait > 0 {
		t := time.NewTimer(q.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		grew := d.events.wait()
		res, err := d.eventsPage(q, limit)
		if err != nil || len(res.Events) > 0 || deadline == nil {
			return res, err
		}
		select {
		case <-grew:
		case <-deadline:
			return res, nil
		case <-ctx.Done():
			return res, nil
		case <-d.closed:
			return res, nil
		}
	}
}

func (d *Daemon) eventsPage(q client.EventsQuery, limit int) (client.Events, error) {
	res := client.Events{Events: []protocol.Event{}}
	err := d.db.View(func(r *pebblekv.Reader) error {
		var (
			es  []pebblekv.Event
			err error
		)
		if q.Scope != "" {
			es, _, err = r.ScopeEventsPage([]string{q.Scope}, q.After, limit)
		} else {
			es, _, err = r.EventsPage(q.After, limit)
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			res.Events = append(res.Events, e.Wire())
			res.Next = e.Seq
			if e.Scope == "" {
				continue
			}
			dec, found, err := r.RouteDecision(e.ID)
			if err != nil {
				return err
			}
			if res.Routes == nil {
				res.Routes = map[string]client.EventRoute{}
			}
			res.Routes[e.ID] = routeSummary(dec, found)
		}
		res.Latest, err = r.LatestSequence()
		return err
	})
	if err != nil {
		return client.Events{}, fmt.Errorf("reading the log: %w", err)
	}
	return res, nil
}
