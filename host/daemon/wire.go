package daemon

import (
	"context"

	"github.com/open-conduit/open-conduit/client"
)

// Wire reads one page of a package's wire tap: the recent JSON-RPC lines
// between the host and its process, after q.After, waiting up to q.Wait
// (at most client.MaxWait) when none follows yet. An unknown package is
// protocol.ErrNotFound.
func (d *Daemon) Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error) {
	x, ok := d.pkgs.get(name)
	if !ok || x.tap == nil {
		return client.WirePage{}, errUnknownExtension(name)
	}
	p := x.tap.Wait(ctx, q.After, q.Limit, min(q.Wait, client.MaxWait))
	p.Extension = name
	return p, nil
}
