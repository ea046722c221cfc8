package daemon

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// checkTimeout bounds one extension's doctor check.
const checkTimeout = 10 * time.Second

// Doctor runs the daemon's checks and every declared check of every
// running package; with opts Deep, the store's deep check too (a read of
// the whole store). It never includes a config value or a secret.
func (d *Daemon) Doctor(ctx context.Context, opts ...client.DoctorOptions) client.Doctor {
	var checks []client.Check
	add := func(c client.Check) { checks = append(checks, c) }

	deep := false
	for _, o := range opts {
		deep = deep || o.Deep
	}
	checks = append(checks, d.storeChecks(ctx, deep)...)
	add(configCheck(d.gen.Load(), d.Phase()))
	exts := d.Extensions()
	for _, p := range exts.Skipped {
		c := client.Check{Name: "discovery", Status: protocol.CheckWarn, Code: p.Code, Detail: fmt.Sprintf("%s skipped: %s", p.Dir, p.Message)}
		if r := remedy(p.Code, p.Name); r != "" {
			c.Remedy = r
		}
		add(c)
	}
	for _, v := range exts.Extensions {
		add(extensionCheck(v))
	}
	g := d.gen.Load()
	for _, x := range d.pkgs.list() {
		s := d.pkgs.running(x)
		if s == nil {
			continue
		}
		m := d.pkgs.snapshot(x).pkg.Manifest
		view := checkView(g, m)
		for _, c := range m.Provides.Checks {
			if c.Deep {
				continue
			}
			add(runCheck(ctx, s, x.name, protocol.CheckRunParams{Check: c.Name, Config: view}))
		}
	}
	ok := true
	for _, c := range checks {
		if c.Status == protocol.CheckFail {
			ok = false
		}
	}
	return client.Doctor{OK: ok, Checks: checks}
}

// configCheck says which file and generation are live.
func configCheck(g *config.Generation, phase string) client.Check {
	if g == nil {
		return client.Check{Name: "config", Status: protocol.CheckWarn, Code: protocol.CodeUnavailable,
			Detail: "the daemon is " + phase + "; no configuration is live yet"}
	}
	c := client.Check{Name: "config", Status: protocol.CheckOK,
		Detail: fmt.Sprintf("generation %d (%s) from %s", g.ID, g.Hash, sourceName(g.Source))}
	if n := len(g.Problems); n > 0 {
		c.Status, c.Code = protocol.CheckWarn, protocol.CodeConfigWarnings
		c.Remedy = remedy(c.Code, "")
		c.Detail += fmt.Sprintf(", %d warning(s): open-conduit config check lists them", n)
	}
	return c
}

// extensionCheck is a package's own health: started, version, protocol,
// restarts, granted variables. A package that does not run fails with the
// code of why, and the remedy.
func extensionCheck(v client.Extension) client.Check {
	c := client.Check{Name: "extension " + v.Name}
	switch {
	case v.State == string(session.StateRunning) && v.Restarts == 0:
		c.Status = protocol.CheckOK
		c.Detail = fmt.Sprintf("running %s (pid %d, protocol %d)", v.Version, v.PID, v.Protocol)
	case v.State == string(session.StateRunning):
		c.Status, c.Code = protocol.CheckWarn, protocol.CodeExtensionRestarted
		c.Detail = fmt.Sprintf("running %s after %d restart(s); last: %s", v.Version, v.Restarts, firstLine(v.LastError))
	default:
		c.Status, c.Code = protocol.CheckFail, v.Code
		if c.Code == "" {
			c.Code = protocol.CodeExtensionUnavailable
		}
		c.Detail = fmt.Sprintf("%s: %s", v.State, firstLine(v.LastError))
	}
	c.Remedy = remedy(c.Code, v.Name)
	if v.Pending != "" {
		c.Detail += "; " + v.Pending
	}
	if len(v.GrantedEnv) > 0 {
		c.Detail += "; granted " + strings.Join(v.GrantedEnv, ", ")
	}
	if len(v.MissingEnv) > 0 {
		c.Detail += "; granted but not set in the daemon's environment: " + strings.Join(v.MissingEnv, ", ")
	}
	return c
}

// checkView is what package m's checks see of the live generation g (nil
// before one is live): its projection's view, without secrets.
func checkView(g *config.Generation, m *protocol.Manifest) *protocol.CheckConfig {
	if g == nil {
		return nil
	}
	v := g.For(m).CheckConfig(g.Dir)
	return &v
}

// runCheck runs one declared check, named as doctor lists it: the check's
// own name when it is the package's or starts with <package>_ or
// <package>-, else <package>_<check>.
func runCheck(ctx context.Context, s *session.Session, pkg string, p protocol.CheckRunParams) client.Check {
	c := checkResult(ctx, s, pkg, p)
	if c.Status != protocol.CheckOK {
		c.Remedy = remedy(c.Code, pkg)
	}
	return c
}

// checkResult is one declared check's answer as doctor shows it.
func checkResult(ctx context.Context, s *session.Session, pkg string, p protocol.CheckRunParams) client.Check {
	name := p.Check
	shown := name
	if name != pkg && !strings.HasPrefix(name, pkg+"_") && !strings.HasPrefix(name, pkg+"-") {
		shown = pkg + "_" + name
	}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	r, err := session.Invoke(cctx, s, protocol.CheckRun, p)
	switch {
	case err != nil:
		return client.Check{Name: shown, Status: protocol.CheckWarn, Code: protocol.CodeExtensionCheckFailed, Detail: err.Error()}
	case r.Status == "":
		if r.OK {
			return client.Check{Name: shown, Status: protocol.CheckOK, Detail: r.Detail}
		}
		return client.Check{Name: shown, Status: protocol.CheckWarn, Code: protocol.CodeExtensionCheckFailed, Detail: r.Detail}
	case r.Status == protocol.CheckOK || r.Status == protocol.CheckInfo || r.Status == protocol.CheckWarn || r.Status == protocol.CheckFail:
		return client.Check{Name: shown, Status: r.Status, Code: r.Code, Detail: r.Detail}
	default:
		return client.Check{Name: shown, Status: protocol.CheckWarn, Code: protocol.CodeExtensionCheckBad, Detail: fmt.Sprintf("answered the unknown status %q", r.Status)}
	}
}
