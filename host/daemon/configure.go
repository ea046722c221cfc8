package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// validate runs the one validation pipeline (parse, the offline rules, each
// running package's own validate) on a config text, with the packages that
// run now: a package that is not running leaves its types unknown, so a
// config using them is refused. It returns the generation the text would
// become (not yet numbered) and every problem, sorted.
//
// It holds every package's op lock while it runs, so no package starts,
// restarts or stops between being counted as running and being asked: a
// restart under way finishes first, and one asked for meanwhile waits.
// Only a crash can still take a package away mid-check; it is then
// reported unavailable, as it is.
func (d *Daemon) validate(ctx context.Context, text []byte, source string) (*config.Generation, config.Problems) {
	unlock := d.pkgs.hold()
	defer unlock()
	running, failed, ask := d.pkgs.validators()
	return validate.Run(ctx, validate.Input{Text: text, Source: source, Running: running, Failed: failed, Ask: ask})
}

// configureParams are what configure sends one package: the live
// generation as that package sees it, and its KV layout. Before the
// configuration is live (while the daemon starts) it is the empty
// generation, id 0.
func (d *Daemon) configureParams(m *protocol.Manifest) protocol.ConfigureParams {
	var p protocol.ConfigureParams
	if g := d.gen.Load(); g != nil {
		p = g.For(m).Configure()
		p.Generation = protocol.Generation{ID: g.ID, Hash: g.Hash}
	}
	// Nothing recorded is layout 0: a package's first configure migrates
	// from there, which a migration must tolerate anyway.
	stored := 0
	_ = d.db.View(func(r *pebblekv.Reader) error {
		v, _, err := r.KVLayoutVersion(m.Name)
		stored = v
		return err
	})
	p.KV = protocol.KVLayout{Stored: stored, Declared: m.KVVersion}
	return p
}

// recordLayout records the layout a package reported after a successful
// configure, so a crash mid-migration is retried at the next start.
func (d *Daemon) recordLayout(m *protocol.Manifest, p protocol.ConfigureParams) {
	if p.KV.Stored == p.KV.Declared {
		return
	}
	err := d.db.Update(func(tx *pebblekv.Tx) error { return tx.SetKVLayoutVersion(m.Name, p.KV.Declared) })
	if err != nil {
		d.logger.Error("recording the KV layout", "extension", m.Name, "err", err)
	}
}

// checkLayout refuses a package whose KV layout is older than the one
// recorded: there is no automatic downgrade.
func (d *Daemon) checkLayout(m *protocol.Manifest) error {
	return d.db.View(func(r *pebblekv.Reader) error {
		stored, recorded, err := r.KVLayoutVersion(m.Name)
		if err != nil {
			return err
		}
		if recorded && m.KVVersion < stored {
			return protocol.Errorf(protocol.ErrKVDowngrade,
				"%s declares KV layout %d but the store holds layout %d, written by a newer release: reinstall that release, or restore a backup taken before the upgrade",
				m.Name, m.KVVersion, stored)
		}
		return nil
	})
}

// reconfigureTimeout bounds one package's answer to a configure sent to it
// while it runs (the first start's is the handshake's): an apply holds the
// daemon's apply lock while it waits, so a hung package must not hold every
// other apply.
const reconfigureTimeout = 15 * time.Second

// configureAll sends configure again to every running package, at once,
// and returns those that refused it or did not answer within
// reconfigureTimeout. A package that is not running gets the live
// generation when it next starts.
func (d *Daemon) configureAll(ctx context.Context) []client.Refusal {
	var (
		mu      sync.Mutex
		refused []client.Refusal
		wg      sync.WaitGroup
	)
	for _, x := range d.pkgs.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A start or restart under way finishes first (its handshake
			// may have sent the generation before this one); then the
			// package, if it runs, is sent this one.
			x.op.Lock()
			defer x.op.Unlock()
			s := d.pkgs.running(x)
			if s == nil {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, reconfigureTimeout)
			defer cancel()
			_, err := s.Reconfigure(cctx)
			if err != nil && cctx.Err() != nil && ctx.Err() == nil {
				err = protocol.Errorf(protocol.ErrUnavailable, "%s did not answer configure within %s; restart it ('open-conduit extension restart %s') so it runs this generation", x.name, reconfigureTimeout, x.name)
			}
			if err != nil {
				d.logger.Error("configure", "extension", x.name, "err", err)
				mu.Lock()
				refused = append(refused, client.Refusal{Extension: x.name, Code: codeOr(err, protocol.CodeConfigureRefused), Message: err.Error()})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sortRefusals(refused)
	return refused
}

// codeOr is err's protocol code, or fallback when it carries none.
func codeOr(err error, fallback string) string {
	if c := protocol.CodeOf(err); c != "" {
		return c
	}
	return fallback
}
