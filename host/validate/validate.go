// Package validate is the one validation pipeline serve, config check and
// config apply share: parse, the offline rules against the packages'
// manifests, each package's own validate of the config objects of its
// types (entries, routes on its handlers and the bindings they bind,
// connections), sorted problems. The packages are asked through the
// running sessions by the daemon, and offline, for config check, by
// starting each package the configuration uses for validate alone.
package validate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/discover"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// Codes of the problems this package reports.
const (
	CodeInvalidConfig        = "invalid_config"
	CodeConfigWarning        = "config_warning"
	CodeExtensionUnavailable = "extension_unavailable"
	// CodeBindingRefused is a route handler's refusal of the binding its
	// route binds: the binding, not the route, is what must change. It is
	// protocol.CodeBindingRefused, which the diagnostics explain.
	CodeBindingRefused = "binding_refused"
)

// maxMessage caps a package's refusal as the problem shows it.
const maxMessage = 300

// Object is one config object a package checks, and where it is.
type Object = config.Object

// Timeout bounds one package's validate of all its objects in one
// validation. The daemon holds its apply lock and every package's op lock
// while it validates, so a package whose validate hangs costs an apply (and
// a restart asked for meanwhile) at most this long, and is named as the
// one that hung.
const Timeout = 10 * time.Second

// Caller calls validate on a package.
type Caller func(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error)

// With checks objects through call, within Timeout (or ctx's deadline when
// that is sooner). A refusal is an error at the object's path with the
// package's message (one line, capped); its warnings are warnings; a
// package that does not serve validate accepts everything; a package that
// fails otherwise refuses its objects as unavailable, and one that runs out
// of time refuses them as unavailable saying it did not answer in time. A
// refused binding is binding_refused, any other refusal invalid_config.
func With(ctx context.Context, pkg string, call Caller, objs []Object) config.Problems {
	budget := Timeout
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var ps config.Problems
	for i, o := range objs {
		res, err := call(ctx, o.Params)
		switch {
		case errors.Is(err, protocol.ErrMethodNotFound):
			return ps
		case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			for _, rest := range objs[i:] {
				ps = append(ps, hung(rest.Path, pkg, budget))
			}
			return ps
		case couldNotAnswer(err):
			ps = append(ps, unavailable(o.Path, pkg, err))
		case err != nil:
			ps = append(ps, refused(pkg, o, err))
		}
		for _, w := range res.Warnings {
			ps = append(ps, config.Problem{Path: o.Path, Code: CodeConfigWarning, Severity: config.Warning,
				Message: fmt.Sprintf("%s: %s", pkg, clip(w))})
		}
	}
	return ps
}

// refused is the problem of an object the package refuses, with its
// message: a binding is refused by the route handler whose route binds it,
// so the problem names both; anything else is invalid config.
func refused(pkg string, o Object, err error) config.Problem {
	if o.Params.Kind == protocol.ValidateBinding {
		return config.Problem{Path: o.Path, Code: CodeBindingRefused, Severity: config.Error,
			Message: fmt.Sprintf("route handler %s (package %s) refuses binding %q: %s", o.Params.Type, pkg, o.Params.Name, clip(err.Error()))}
	}
	return config.Problem{Path: o.Path, Code: CodeInvalidConfig, Severity: config.Error,
		Message: fmt.Sprintf("%s refuses this %s config: %s", pkg, o.Params.Type, clip(err.Error()))}
}

// hung is the problem of an object whose package did not answer validate
// in time: the package is named, since nothing is wrong with the object
// that anyone knows.
func hung(path, pkg string, budget time.Duration) config.Problem {
	return config.Problem{Path: path, Code: CodeExtensionUnavailable, Severity: config.Error,
		Message: fmt.Sprintf("%s did not answer validate within %s, so this object is unchecked: %s's validate may be hung. Read 'open-conduit logs %s', restart it with 'open-conduit extension restart %s', and apply again",
			pkg, budget.Round(time.Millisecond), pkg, pkg, pkg)}
}

// couldNotAnswer reports an error that says nothing about the config: the
// package was not there to answer (it crashed, was stopping, was busy, or
// ran out of time).
func couldNotAnswer(err error) bool {
	switch protocol.CodeOf(err) {
	case protocol.CodeTransport, protocol.CodeShuttingDown, protocol.CodeOverloaded, protocol.CodeCancelled, protocol.CodeUnavailable:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func unavailable(path, pkg string, err error) config.Problem {
	return config.Problem{Path: path, Code: CodeExtensionUnavailable, Severity: config.Error,
		Message: fmt.Sprintf("%s could not check this object: %s", pkg, clip(err.Error()))}
}

func clip(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}

// OfflineOptions configures Offline.
type OfflineOptions struct {
	// Self is the executable host-run packages run (default this one).
	Self string
	// Environ is the environment packages start from (default os.Environ()).
	Environ []string
	// Timeout bounds each package's start and checks (default 15 s).
	Timeout time.Duration
}

// Offline asks packages started for validate alone, for config check,
// which has no daemon: each package the pipeline asks (one with objects in
// the config that serves validate) is started with no store behind it (KV,
// state and event methods refuse), a temporary state directory removed
// afterwards, the variables the config being checked grants it, and an
// empty configure that reports its KV layout as current; it is stopped once
// its objects are checked. pkgs are the packages discovery found; one the
// pipeline asks about that is not among them refuses its objects as
// unavailable.
func Offline(pkgs []discover.Package, opts OfflineOptions) Asker {
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	return func(ctx context.Context, a Ask) config.Problems {
		for _, p := range pkgs {
			if p.Manifest == a.Manifest || p.Name == a.Manifest.Name {
				return offlineOne(ctx, p, a, opts)
			}
		}
		return refuseAll(a, protocol.Errorf(protocol.ErrStartFailed, "%s was not found by discovery", a.Manifest.Name))
	}
}

func offlineOne(ctx context.Context, p discover.Package, a Ask, opts OfflineOptions) config.Problems {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "open-conduit-validate-")
	if err != nil {
		return refuseAll(a, err)
	}
	defer os.RemoveAll(tmp)
	m := p.Manifest
	dir := p.Dir
	if dir == "" {
		dir = tmp
	}
	s, err := session.Start(ctx, session.Package{Dir: dir, Manifest: m}, session.Options{
		StateDir:         tmp,
		Self:             opts.Self,
		Environ:          opts.Environ,
		PassEnv:          a.Config.PassEnv(m.Name),
		HandshakeTimeout: opts.Timeout,
		Configure: func() protocol.ConfigureParams {
			return protocol.ConfigureParams{KV: protocol.KVLayout{Stored: m.KVVersion, Declared: m.KVVersion}}
		},
		Backoff: session.Backoff{Min: time.Hour},
	})
	if err != nil {
		return refuseAll(a, err)
	}
	defer s.Close(context.Background())
	return With(ctx, p.Name, SessionCaller(s), a.Objects)
}

// SessionCaller calls validate through a running session.
func SessionCaller(s *session.Session) Caller {
	return func(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error) {
		return session.Invoke(ctx, s, protocol.Validate, p)
	}
}

// refuseAll refuses every object of a package that could not check them.
func refuseAll(a Ask, err error) config.Problems {
	ps := make(config.Problems, 0, len(a.Objects))
	for _, o := range a.Objects {
		ps = append(ps, unavailable(o.Path, a.Manifest.Name, err))
	}
	return ps
}
