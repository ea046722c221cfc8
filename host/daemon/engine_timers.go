package daemon

import (
	"context"
)

// CallInTx makes an in-transaction call (recurrence.next) on pkg's running
// process with the session's in-transaction rules: no wait for a restart,
// the 250 ms bound, every callback refused meanwhile.
func (p enginePackages) CallInTx(ctx context.Context, pkg, method string, params, result any) error {
	s, err := p.session(pkg)
	if err != nil {
		return err
	}
	return s.CallInTx(ctx, method, params, result)
}

// timersChanged is what a package's service calls after it armed or
// cancelled a timer: the scheduler looks at the store again.
func (d *Daemon) timersChanged() {
	if d.engine != nil {
		d.engine.TimersChanged()
	}
}
