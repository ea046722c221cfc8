package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// genNamespace keeps the daemon's own records in the store's KV. "core" is
// a reserved name no package can take, so no extension can address it.
const genNamespace = "core.config"

// adopt checks a config against the packages and makes it the running
// generation, numbered after the last one the store recorded.
func (d *Daemon) adopt(cfg *config.Config, data []byte, ms []*protocol.Manifest) error {
	problems := config.Check(cfg, ms)
	if errs := problems.Errors(); len(errs) > 0 {
		return fmt.Errorf("the configuration has %d problem(s); fix them and start again (open-conduit config check lists them):\n%w", len(errs), errs)
	}
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
		return tx.KVPut(genNamespace, "text", data)
	})
	if err != nil {
		return fmt.Errorf("recording the config generation: %w", err)
	}
	hash := config.Hash(data)
	d.genID.Store(id)
	d.genHash.Store(&hash)
	d.problems = problems
	d.gen.Store(&service.Generation{Config: cfg, Dir: filepath.Dir(d.opts.ConfigFile)})
	for _, p := range problems {
		d.logger.Warn("config warning", "path", p.Path, "code", p.Code, "message", p.Message)
	}
	return nil
}

// configureParams are what configure sends one package: its entries in
// enabled scopes (and, apart, in disabled ones), the connections of its
// types (secret names only), and its KV layout.
func (d *Daemon) configureParams(m *protocol.Manifest) protocol.ConfigureParams {
	g := d.gen.Load()
	p := protocol.ConfigureParams{Generation: protocol.Generation{ID: d.genID.Load(), Hash: *d.genHash.Load()}}
	own := map[string]bool{}
	for _, e := range m.Provides.Extensions {
		own[e.Type] = true
	}
	connTypes := map[string]bool{}
	for _, c := range m.Provides.Connections {
		connTypes[c.Type] = true
	}
	usedConns := map[string]bool{}
	for _, sc := range g.Config.Scopes {
		var bindingConns []string
		for _, b := range sc.Bindings {
			if c, ok := g.Config.Connection(b.Connection); ok && connTypes[c.Type] && slices.Contains(sc.Connections, c.Name) {
				bindingConns = append(bindingConns, c.Name)
				usedConns[c.Name] = true
			}
		}
		for _, e := range sc.Entries {
			if !own[e.Type] {
				continue
			}
			entry := protocol.Entry{Scope: sc.ID, Type: e.Type, Name: e.Name, Config: e.Config, BindingConnections: bindingConns}
			if c, ok := g.Config.Connection(e.Connection); ok && connTypes[c.Type] && slices.Contains(sc.Connections, c.Name) {
				entry.Connection = c.Name
				usedConns[c.Name] = true
			}
			if sc.Disabled {
				p.Disabled = append(p.Disabled, entry)
			} else {
				p.Entries = append(p.Entries, entry)
			}
		}
	}
	for _, c := range g.Config.Connections {
		if !usedConns[c.Name] {
			continue
		}
		conn := protocol.Connection{Name: c.Name, Type: c.Type, Config: c.Config}
		for k := range c.SecretRefs {
			conn.Secrets = append(conn.Secrets, k)
		}
		slices.Sort(conn.Secrets)
		p.Connections = append(p.Connections, conn)
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

// Apply validates a new config and makes it the running generation:
// configure is sent again to every running package, without a restart.
// A config with errors changes nothing.
func (d *Daemon) Apply(ctx context.Context, data []byte) (ApplyResult, error) {
	d.genMu.Lock()
	defer d.genMu.Unlock()
	cfg, err := config.Parse(data)
	if err != nil {
		return ApplyResult{Problems: asProblems(err)}, nil
	}
	ms := d.manifests()
	if problems := d.check(ctx, cfg, ms); len(problems.Errors()) > 0 {
		return ApplyResult{Problems: problems}, nil
	}
	if err := d.adopt(cfg, data, ms); err != nil {
		return ApplyResult{}, err
	}
	res := ApplyResult{Applied: true, Generation: d.genID.Load(), Hash: *d.genHash.Load(), Problems: d.problems}
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
	cfg, err := config.Parse(data)
	if err != nil {
		return asProblems(err)
	}
	return d.check(ctx, cfg, d.manifests())
}

// check runs the offline rules, then asks each running package to check
// the objects of its own types.
func (d *Daemon) check(ctx context.Context, cfg *config.Config, ms []*protocol.Manifest) config.Problems {
	ps := config.Check(cfg, ms)
	if len(ps.Errors()) > 0 {
		return ps
	}
	for _, x := range d.extensions() {
		if x.session == nil || !x.pkg.Manifest.Enabled(protocol.MethodValidate) {
			continue
		}
		s := x.session
		ps = append(ps, validate.With(ctx, x.pkg.Name, func(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error) {
			var r protocol.ValidateResult
			err := s.Call(ctx, protocol.MethodValidate, p, &r)
			return r, err
		}, validate.Objects(cfg, x.pkg.Manifest))...)
	}
	ps.Sort()
	return ps
}

func asProblems(err error) config.Problems {
	if ps, ok := err.(config.Problems); ok {
		return ps
	}
	return config.Problems{{Path: "/", Code: "invalid_json", Severity: config.Error, Message: err.Error()}}
}

func (d *Daemon) manifests() []*protocol.Manifest {
	var ms []*protocol.Manifest
	for _, x := range d.extensions() {
		ms = append(ms, x.pkg.Manifest)
	}
	return ms
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
