package daemon

import "github.com/open-conduit/open-conduit/protocol"

// InstalledManifests are the manifests of every installed package, running
// or not, by name: the engine asks for a run's environment layers and
// about a Wait's dependency by what a package declares, so a package that
// is away fails those calls rather than being silently skipped.
func (p enginePackages) InstalledManifests() []*protocol.Manifest {
	var ms []*protocol.Manifest
	for _, x := range p.d.pkgs.list() {
		if m := p.d.pkgs.snapshot(x).pkg.Manifest; m != nil {
			ms = append(ms, m)
		}
	}
	return ms
}
