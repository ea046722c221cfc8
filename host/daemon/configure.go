package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// genNamespace keeps the daemon's own records in the store's KV. "core" is
// a reserved name no package can take, so no extension can address it.
const genNamespace = "core.config"

// adopt numbers a checked generation after the last one the store
// recorded and makes it the running one, in one pointer swap.
func (d *Daemon) adopt(g *config.Generation) error {
	var id int64
	err := d.db.Update(func(tx *pebblekv.Tx) error {
		v, _, found, err := tx.KVGet(genNamespace, "generation")
		if err != nil {
			return err
		}
		if found {
			id, _ = strconv.ParseInt(string(v), 10, 64)
		}
		id++
		if err := tx.KVPut(genNamespace, "generation", []byte(strconv.FormatInt(id, 10))); err != nil {
			return err
		}
		return tx.KVPut(genNamespace, "text", g.Text)
	})
	if err != nil {
		return fmt.Errorf("recording the config generation: %w", err)
	}
	d.gen.Store(g.WithID(id))
	for _, p := range g.Problems {
		d.logger.Warn("config warning", "path", p.Path, "code", p.Code, "message", p.Message)
	}
	return nil
}

// configureParams are what configure sends one package: what it sees of
// the running generation, and its KV layout.
func (d *Daemon) configureParams(m *protocol.Manifest) protocol.ConfigureParams {
	g := d.gen.Load()
	p := g.For(m).Configure()
	p.Generation = protocol.Generation{ID: g.ID, Hash: g.Hash}
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

// Apply validates a new config and makes it the running generation:
// configure is sent again to every running package, without a restart.
// A config with errors changes nothing.
func (d *Daemon) Apply(ctx context.Context, data []byte) (ApplyResult, error) {
	d.genMu.Lock()
	defer d.genMu.Unlock()
	g, problems := validate.Run(ctx, d.validation(data))
	if g == nil {
		return ApplyResult{Problems: problems}, nil
	}
	if err := d.adopt(g); err != nil {
		return ApplyResult{}, err
	}
	g = d.gen.Load()
	res := ApplyResult{Applied: true, Generation: g.ID, Hash: g.Hash, Problems: g.Problems}
	for _, x := range d.extensions() {
		if x.session == nil {
			continue
		}
		if _, err := x.session.Reconfigure(ctx); err != nil {
			d.logger.Error("configure after apply", "extension", x.pkg.Name, "err", err)
			res.Refused = append(res.Refused, client.Refusal{Extension: x.pkg.Name, Code: protocol.CodeOf(err), Message: err.Error()})
		}
	}
	return res, nil
}

// Validate checks a config against the running packages without applying
// it.
func (d *Daemon) Validate(ctx context.Context, data []byte) config.Problems {
	_, ps := validate.Run(ctx, d.validation(data))
	return ps
}

// validation is the pipeline's input for a config sent to the running
// daemon: its packages, those that could not start apart, asked through
// their sessions.
func (d *Daemon) validation(data []byte) validate.Input {
	in := validate.Input{Text: data, Dir: filepath.Dir(d.opts.ConfigFile), Ask: d.ask}
	for _, x := range d.extensions() {
		d.mu.Lock()
		s, startErr := x.session, x.startErr
		d.mu.Unlock()
		if s == nil && startErr != nil {
			in.Failed = append(in.Failed, validate.Failed{Manifest: x.pkg.Manifest, Err: startErr})
			continue
		}
		in.Running = append(in.Running, x.pkg.Manifest)
	}
	return in
}

// ask has a running package check its objects through its session.
func (d *Daemon) ask(ctx context.Context, a validate.Ask) config.Problems {
	var s *session.Session
	d.mu.Lock()
	if x := d.exts[a.Manifest.Name]; x != nil {
		s = x.session
	}
	d.mu.Unlock()
	if s == nil {
		return nil
	}
	return validate.With(ctx, a.Manifest.Name, validate.SessionCaller(s), a.Objects)
}

// ApplyResult is what config apply answers.
type ApplyResult struct {
	Applied    bool            `json:"applied"`
	Generation int64           `json:"generation,omitzero"`
	Hash       string          `json:"hash,omitempty"`
	Problems   config.Problems `json:"problems,omitempty"`
	// Refused are the packages whose configure failed after the apply.
	Refused []client.Refusal `json:"refused,omitempty"`
}
