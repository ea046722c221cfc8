package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// ReconcileSources is what a WebhookRoutes may also say: the sources each
// package's last configure registered, with their families. Only these are
// reconciled.
type ReconcileSources interface {
	// IngressSources maps each package to its registered sources. The
	// caller does not modify it.
	IngressSources() map[string][]protocol.Source
}

// ReconcileReport is what one scan of a source did.
type ReconcileReport struct {
	Package string
	Source  string
	// Pages counts the pages answered, Observations their observations,
	// Added the Events newly accepted from them.
	Pages        int
	Observations int
	Added        int
	// Complete says the scan reached its last page, and so advanced the
	// checkpoint to Checkpoint; otherwise Checkpoint is the one it started
	// from, unchanged.
	Complete   bool
	Checkpoint string
}

// reconcileMaxPages bounds one scan, so a package that hands out page
// tokens forever cannot hold the scanner.
const reconcileMaxPages = 10_000

// Reconcile scans source of pkg now, page by page (ingress.reconcile),
// within the page limits and deadline: each page's new observations are
// accepted as Events in one synced transaction, and only a scan that
// completes advances the source's checkpoint. On any failure (the package
// errs or dies, a page times out, breaks a limit or conflicts with a bound
// observation) the pages before it stay accepted, nothing else is inferred,
// and the error says what happened; the next scan starts again from the old
// checkpoint, and what it sees again is accepted once. Scans run one at a
// time.
func (e *Engine) Reconcile(ctx context.Context, pkg, source string) (ReconcileReport, error) {
	src, err := e.reconcile.source(pkg, source)
	if err != nil {
		// No Package: the scan never started (an unknown or push-only
		// source), which callers answer as a refusal, not a scan.
		return ReconcileReport{Source: source}, err
	}
	return e.reconcile.scan(ctx, pkg, src)
}

// source finds source among pkg's registered sources.
func (rc *reconciler) source(pkg, source string) (protocol.Source, error) {
	rs, ok := rc.e.ingress.webhookRoutes().(ReconcileSources)
	if ok {
		for _, s := range rs.IngressSources()[pkg] {
			switch {
			case s.Name != source:
				continue
			case !s.Reconcile:
				return protocol.Source{}, protocol.Errorf(protocol.ErrInvalid,
					"source %q of %s is push-only (its configure does not mark it reconcile): there is nothing to scan", source, pkg)
			}
			return s, nil
		}
	}
	return protocol.Source{}, protocol.Errorf(protocol.ErrNotFound,
		"%s registered no source %q in its last configure; reconcile one of the sources it registers", pkg, source)
}

// scan runs one whole scan of src.
func (rc *reconciler) scan(ctx context.Context, pkg string, src protocol.Source) (rep ReconcileReport, err error) {
	rc.scanMu.Lock()
	defer rc.scanMu.Unlock()
	started := rc.e.d.Clock.Now()
	defer func() { rc.ended(ScanOutcome{Started: started, Ended: rc.e.d.Clock.Now(), Report: rep, Err: err}) }()
	rep = ReconcileReport{Package: pkg, Source: src.Name}
	m, ok := rc.e.d.Packages.Manifest(pkg)
	if !ok {
		return rep, protocol.Errorf(protocol.ErrUnavailable, "%s is not running, so its source %s is not scanned", pkg, src.Name)
	}
	if !m.Enabled(protocol.MethodIngressReconcile) {
		return rep, protocol.Errorf(protocol.ErrUnsupported, "%s declares no ingress type, so it answers no %s", pkg, protocol.MethodIngressReconcile)
	}
	cp, err := rc.checkpoint(src.Name)
	if err != nil {
		return rep, err
	}
	rep.Checkpoint = cp.Checkpoint
	token := ""
	for rep.Pages < reconcileMaxPages {
		res, err := rc.page(ctx, pkg, src.Name, cp.Checkpoint, token)
		if err != nil {
			return rep, err
		}
		rep.Pages++
		obs, err := rc.checkPage(pkg, m, src, res)
		if err != nil {
			return rep, fmt.Errorf("page %d of source %s: %w", rep.Pages, src.Name, err)
		}
		rep.Observations += len(obs)
		var next *pebblekv.Checkpoint
		if res.Complete {
			next = &pebblekv.Checkpoint{Source: src.Name, Owner: pkg, Checkpoint: res.Checkpoint,
				Completed: rc.e.d.Clock.Now(), Scans: cp.Scans + 1}
		}
		added, err := rc.accept(src.Name, obs, next)
		rep.Added += added
		if err != nil {
			return rep, fmt.Errorf("page %d of source %s: %w", rep.Pages, src.Name, err)
		}
		if res.Complete {
			rep.Complete, rep.Checkpoint = true, res.Checkpoint
			return rep, nil
		}
		token = res.NextPageToken
	}
	return rep, protocol.Errorf(protocol.ErrInvalid, "%s answered %d pages of source %s without completing the scan; end a scan within %d pages",
		pkg, rep.Pages, src.Name, reconcileMaxPages)
}

// checkpoint is src's checkpoint (the zero one before any complete scan).
func (rc *reconciler) checkpoint(source string) (pebblekv.Checkpoint, error) {
	var cp pebblekv.Checkpoint
	err := rc.e.d.DB.View(func(r *pebblekv.Reader) (err error) {
		cp, _, err = r.Checkpoint(source)
		return err
	})
	return cp, err
}

// page asks pkg for one page, within the page deadline.
func (rc *reconciler) page(ctx context.Context, pkg, source, checkpoint, token string) (protocol.IngressReconcileResult, error) {
	pctx, cancel := context.WithTimeout(ctx, rc.pageDeadline)
	defer cancel()
	p := protocol.IngressReconcileParams{Source: source, Checkpoint: checkpoint, PageToken: token, Limits: rc.limits}
	var res protocol.IngressReconcileResult
	if err := rc.e.d.Packages.Call(pctx, pkg, protocol.MethodIngressReconcile, p, &res); err != nil {
		if errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return res, protocol.Errorf(protocol.ErrUnavailable, "%s did not answer %s of source %s within %s; answer smaller pages sooner",
				pkg, protocol.MethodIngressReconcile, source, rc.pageDeadline)
		}
		return res, fmt.Errorf("%s of source %s on %s: %w", protocol.MethodIngressReconcile, source, pkg, err)
	}
	return res, nil
}

// observed is one observation as the host will accept it.
type observed struct {
	o        protocol.Observation
	em       protocol.Emission
	envelope string
}

// checkPage refuses a page over its limits, incoherent about its end, or
// holding an observation the package may not write; it settles each
// observation's type and envelope.
func (rc *reconciler) checkPage(pkg string, m *protocol.Manifest, src protocol.Source, res protocol.IngressReconcileResult) ([]observed, error) {
	switch {
	case len(res.Observations) > rc.limits.Items:
		return nil, protocol.Errorf(protocol.ErrTooLarge, "%s answered %d observations, over the page's limit of %d items; answer at most limits.items",
			pkg, len(res.Observations), rc.limits.Items)
	case res.Complete && res.NextPageToken != "":
		return nil, protocol.Errorf(protocol.ErrInvalid, "%s answered a complete page with a next_page_token; a last page names none", pkg)
	case !res.Complete && res.NextPageToken == "":
		return nil, protocol.Errorf(protocol.ErrInvalid, "%s answered an incomplete page with no next_page_token; name the next page or say complete", pkg)
	}
	size := 0
	for _, o := range res.Observations {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, protocol.Errorf(protocol.ErrInvalid, "observation %s@%s cannot be encoded: %v", o.Item, o.Version, err)
		}
		size += len(raw)
	}
	if size > rc.limits.Bytes {
		return nil, protocol.Errorf(protocol.ErrTooLarge, "%s answered %d bytes of observations, over the page's limit of %d bytes; answer at most limits.bytes",
			pkg, size, rc.limits.Bytes)
	}
	rules := protocol.HostKVRules(m, rc.e.ingress.generation().For(m).Uses)
	out := make([]observed, 0, len(res.Observations))
	for _, o := range res.Observations {
		ob, err := settle(rules, src, o)
		if err != nil {
			return nil, err
		}
		out = append(out, ob)
	}
	return out, nil
}

// settle checks one observation as every Event the package writes is
// checked, with its type settled from the source's families.
func settle(rules protocol.KVRules, src protocol.Source, o protocol.Observation) (observed, error) {
	if err := protocol.CheckObservationIdentity(o); err != nil {
		return observed{}, err
	}
	typ := o.Type
	if typ == "" && len(src.Families) == 1 {
		typ = src.Families[0]
	}
	if !slices.Contains(src.Families, typ) {
		return observed{}, protocol.Errorf(protocol.ErrInvalid, "observation %s@%s has type %q, not one of source %s's families [%s]; name one in its type",
			o.Item, o.Version, typ, src.Name, strings.Join(src.Families, ", "))
	}
	em := protocol.Emission{Scope: o.Scope, Source: src.Name, DeliveryID: protocol.ObservationDeliveryID(o.Item, o.Version), Type: typ, Payload: o.Payload}
	if err := rules.CheckEmission(em); err != nil {
		return observed{}, fmt.Errorf("observation %s@%s: %w", o.Item, o.Version, err)
	}
	env, err := digest.ObservationEnvelope(o, typ)
	if err != nil {
		return observed{}, err
	}
	return observed{o: o, em: em, envelope: env}, nil
}

// accept takes one page in one synced transaction: each identity never seen
// is bound to its envelope and accepted as an Event; one seen with the same
// envelope is nothing new. Any conflict refuses the whole page, recorded
// apart, so the refusal is the same however often the page comes. With
// next set, the checkpoint advances in the same transaction.
func (rc *reconciler) accept(source string, obs []observed, next *pebblekv.Checkpoint) (int, error) {
	added := 0
	now := rc.e.d.Clock.Now()
	err := rc.e.d.DB.Update(func(tx *pebblekv.Tx) error {
		added = 0
		var conflicts []pebblekv.ObservationConflict
		page := map[string]string{} // identity → envelope, within the page
		for _, ob := range obs {
			bound, found, err := tx.Observation(source, ob.o.Item, ob.o.Version)
			if err != nil {
				return err
			}
			if !found {
				if env, ok := page[ob.em.DeliveryID]; ok {
					bound, found = pebblekv.Observation{Envelope: env}, true
				}
			}
			if found {
				if bound.Envelope != ob.envelope {
					conflicts = append(conflicts, pebblekv.ObservationConflict{Source: source, Item: ob.o.Item, Version: ob.o.Version,
						Bound: bound.Envelope, Refused: ob.envelope})
				}
				continue
			}
			page[ob.em.DeliveryID] = ob.envelope
			if len(conflicts) > 0 {
				continue
			}
			isNew, err := rc.bind(tx, source, ob, now)
			if err != nil {
				return err
			}
			if isNew {
				added++
			}
		}
		if len(conflicts) > 0 {
			return &errBindConflicts{conflicts}
		}
		if next != nil {
			return tx.PutCheckpoint(*next)
		}
		return nil
	})
	var pc *errBindConflicts
	if errors.As(err, &pc) {
		return 0, rc.refuse(source, pc.conflicts, now)
	}
	if err != nil {
		return 0, err
	}
	if added > 0 {
		rc.e.Notify()
	}
	return added, nil
}

// bind accepts ob's Event and binds its identity; isNew says the Event was
// not in the log before (a push may have delivered it under the same ID).
func (rc *reconciler) bind(tx *pebblekv.Tx, source string, ob observed, now time.Time) (bool, error) {
	ev, isNew, err := tx.Accept(pebblekv.EventInput{
		Scope: ob.em.Scope, Source: source, Type: ob.em.Type, DeliveryID: ob.em.DeliveryID, Payload: ob.em.Payload, Time: now,
	}, rc.e.d.Limits)
	if err != nil {
		return false, fmt.Errorf("observation %s: %w", ob.em.DeliveryID, err)
	}
	return isNew, tx.PutObservation(pebblekv.Observation{Source: source, Item: ob.o.Item, Version: ob.o.Version,
		Envelope: ob.envelope, Event: ev.ID, Seen: now})
}

// refuse records and logs a page's conflicts and answers the refusal: the
// first conflict in page order names it, so the same page is refused with
// the same words each time.
func (rc *reconciler) refuse(source string, conflicts []pebblekv.ObservationConflict, now time.Time) error {
	rc.e.recordConflicts(conflicts, now)
	first := conflicts[0]
	rc.e.d.Logger.Warn("reconcile page refused: an observation conflicts with its bound envelope",
		"source", source, "item", first.Item, "version", first.Version, "conflicts", len(conflicts))
	return protocol.Errorf(protocol.ErrConflict,
		"observation %s of source %s was accepted before with another envelope (%d conflicting on the page); nothing of the page is accepted: give a changed item a new version",
		protocol.ObservationDeliveryID(first.Item, first.Version), source, len(conflicts))
}
