package daemon

import (
	"sort"

	"github.com/open-conduit/open-conduit/protocol"
)

// gatesOf names, sorted, the installed packages (running or not) whose
// manifest enables method (operation.gate or work.admit) and whose
// configuration in the live generation uses scope. A gate that is not
// running is named too: asking it fails, and the engine and the toolbelt
// fail closed.
func (d *Daemon) gatesOf(scope, method string) []string {
	g := d.gen.Load()
	if g == nil || g.Config == nil {
		return nil
	}
	var out []string
	for _, x := range d.pkgs.list() {
		m := d.pkgs.snapshot(x).pkg.Manifest
		if m == nil || !m.Enabled(method) {
			continue
		}
		if g.For(m).Uses(scope) {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// StartGates names the start gates of scope, for the engine.
func (p enginePackages) StartGates(scope string) []string {
	return p.d.gatesOf(scope, protocol.MethodWorkAdmit)
}

// OperationGates names the operation gates of scope, for the toolbelt.
func (p toolbeltPackages) OperationGates(scope string) []string {
	return p.d.gatesOf(scope, protocol.MethodOperationGate)
}
