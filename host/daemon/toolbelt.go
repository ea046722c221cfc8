package daemon

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"time"

	"github.com/open-conduit/open-conduit/host/toolbelt"
	"github.com/open-conduit/open-conduit/protocol"
)

// toolbeltPath is the toolbelt's socket, <state>/toolbelt.sock: what every
// execution is given as its toolbelt.
func (d *Daemon) toolbeltPath() string {
	return filepath.Join(d.opts.StateDir, toolbelt.SocketName)
}

// startToolbelt serves the toolbelt on its socket, owner-only in the
// owner-only state directory, for the daemon's life. It needs the engine
// and the store, so it starts after both.
func (d *Daemon) startToolbelt() error {
	ln, err := toolbelt.Listen(d.toolbeltPath())
	if err != nil {
		return err
	}
	d.toolbelt = toolbelt.New(toolbelt.Deps{
		Engine:   d.engine,
		Packages: toolbeltPackages{enginePackages{d}},
		Grant:    d.grant,
		DB:       d.db,
		Logger:   d.logger.With("component", "toolbelt"),
	})
	go func() {
		if err := d.toolbelt.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.logger.Error("toolbelt stopped", "err", err)
		}
	}()
	return nil
}

// stopToolbelt stops taking calls, waiting briefly for those being
// answered; closing the listener removes the socket.
func (d *Daemon) stopToolbelt(ctx context.Context) {
	if d.toolbelt == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = d.toolbelt.Shutdown(sctx)
}

// grant is the live generation's grant of a binding in a scope.
func (d *Daemon) grant(scope, binding string) (toolbelt.Grant, bool) {
	g := d.gen.Load()
	if g == nil || g.Config == nil {
		return toolbelt.Grant{}, false
	}
	sc, ok := g.Config.Scope(scope)
	if !ok {
		return toolbelt.Grant{}, false
	}
	for _, b := range sc.Bindings {
		if b.Name == binding {
			return toolbelt.Grant{Operations: b.Operations, Connection: b.Connection, Toolbelt: b.Toolbelt}, true
		}
	}
	return toolbelt.Grant{}, false
}

// toolbeltPackages is the toolbelt's view of the packages: the engine's,
// and who declares an operation.
type toolbeltPackages struct{ enginePackages }

// OperationOwner names the package declaring operation name, running or
// not (a call to one that is not running is answered unavailable).
func (p toolbeltPackages) OperationOwner(name string) (string, protocol.Operation) {
	for _, x := range p.d.pkgs.list() {
		m := p.d.pkgs.snapshot(x).pkg.Manifest
		if m == nil {
			continue
		}
		if op, ok := m.Operation(name); ok {
			return m.Name, op
		}
	}
	return "", protocol.Operation{}
}
