package daemon

import (
	"context"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/engine"
	"github.com/open-conduit/open-conduit/protocol"
)

// Sources lists every source the packages' last configures registered,
// with its checkpoint and this run's last scan.
func (d *Daemon) Sources(context.Context) (client.Sources, error) {
	eng, err := d.engineReady()
	if err != nil {
		return client.Sources{}, err
	}
	st, err := eng.Sources()
	if err != nil {
		return client.Sources{}, err
	}
	res := client.Sources{Sources: make([]client.Source, 0, len(st))}
	for _, s := range st {
		v := client.Source{Package: s.Package, Name: s.Source, Families: s.Families, Reconcile: s.Reconcile, NextScan: s.NextScan}
		if s.Found {
			v.Checkpoint, v.Completed, v.Scans = s.Checkpoint.Checkpoint, s.Checkpoint.Completed, s.Checkpoint.Scans
		}
		if s.LastScan != nil {
			scan := scanView(*s.LastScan)
			v.LastScan = &scan
		}
		res.Sources = append(res.Sources, v)
	}
	return res, nil
}

// Reconcile scans source now. A scan cut short is answered, with its
// error; a scan that never started (a source no package registered, a
// push-only one, an engine not yet running) is an error.
func (d *Daemon) Reconcile(ctx context.Context, source string) (client.Scan, error) {
	eng, err := d.engineReady()
	if err != nil {
		return client.Scan{}, err
	}
	started := time.Now()
	rep, err := eng.ReconcileSource(ctx, source)
	if err != nil && rep.Package == "" {
		return client.Scan{}, err
	}
	return scanView(engine.ScanOutcome{Started: started, Ended: time.Now(), Report: rep, Err: err}), nil
}

// scanView is a scan as the API shows it.
func scanView(o engine.ScanOutcome) client.Scan {
	r := o.Report
	s := client.Scan{Package: r.Package, Source: r.Source, Pages: r.Pages, Observations: r.Observations, Accepted: r.Added,
		Complete: r.Complete, Checkpoint: r.Checkpoint, Started: o.Started, Ended: o.Ended}
	if o.Err != nil {
		code := protocol.CodeOf(o.Err)
		if code == "" {
			code = protocol.CodeInternal
		}
		s.Error = &client.Error{Code: code, Message: o.Err.Error()}
	}
	return s
}
