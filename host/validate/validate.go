// Package validate asks packages to check the config objects of their own
// types (entries, connections): the daemon through the running sessions
// before it applies a configuration, and config check offline, by starting
// each package the configuration uses for validate alone.
package validate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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
)

// maxMessage caps a package's refusal as the problem shows it.
const maxMessage = 300

// Object is one config object a package checks, and where it is.
type Object struct {
	Path   string
	Params protocol.ValidateParams
}

// Objects lists the config objects of m's declared types in cfg: entries
// of its extension types and connections of its connection types.
func Objects(cfg *config.Config, m *protocol.Manifest) []Object {
	ext := map[string]bool{}
	for _, e := range m.Provides.Extensions {
		ext[e.Type] = true
	}
	conn := map[string]bool{}
	for _, c := range m.Provides.Connections {
		conn[c.Type] = true
	}
	var out []Object
	for i, sc := range cfg.Scopes {
		for j, e := range sc.Entries {
			if ext[e.Type] {
				out = append(out, Object{
					Path:   fmt.Sprintf("/scopes/%d/entries/%d/config", i, j),
					Params: protocol.ValidateParams{Kind: protocol.ValidateExtension, Type: e.Type, Config: e.Config, Scope: sc.ID, Name: e.Name},
				})
			}
		}
	}
	for i, c := range cfg.Connections {
		if conn[c.Type] {
			out = append(out, Object{
				Path:   fmt.Sprintf("/connections/%d/config", i),
				Params: protocol.ValidateParams{Kind: protocol.ValidateConnection, Type: c.Type, Config: c.Config, Name: c.Name},
			})
		}
	}
	return out
}

// Caller calls validate on a package.
type Caller func(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error)

// With checks objects through call. A refusal is an error at the object's
// path with the package's message (one line, capped); its warnings are
// warnings; a package that does not serve validate accepts everything; a
// package that fails otherwise refuses its objects as unavailable.
func With(ctx context.Context, pkg string, call Caller, objs []Object) config.Problems {
	var ps config.Problems
	for _, o := range objs {
		res, err := call(ctx, o.Params)
		switch {
		case errors.Is(err, protocol.ErrMethodNotFound):
			return ps
		case protocol.CodeOf(err) == protocol.CodeTransport || errors.Is(err, context.DeadlineExceeded):
			ps = append(ps, unavailable(o.Path, pkg, err))
		case err != nil:
			ps = append(ps, config.Problem{Path: o.Path, Code: CodeInvalidConfig, Severity: config.Error,
				Message: fmt.Sprintf("%s refuses this %s config: %s", pkg, o.Params.Type, clip(err.Error()))})
		}
		for _, w := range res.Warnings {
			ps = append(ps, config.Problem{Path: o.Path, Code: CodeConfigWarning, Severity: config.Warning,
				Message: fmt.Sprintf("%s: %s", pkg, clip(w))})
		}
	}
	return ps
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

// Offline starts, at once, each package with objects in cfg that can
// validate them, for validate alone: no store behind it (KV, state and
// event methods refuse), a temporary state directory removed afterwards, an
// empty configure that reports its KV layout as current. It stops each one
// once its objects are checked.
func Offline(ctx context.Context, cfg *config.Config, pkgs []discover.Package, opts OfflineOptions) config.Problems {
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	var (
		mu sync.Mutex
		ps config.Problems
		wg sync.WaitGroup
	)
	for _, p := range pkgs {
		objs := Objects(cfg, p.Manifest)
		if len(objs) == 0 || !p.Manifest.Enabled(protocol.MethodValidate) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			found := offlineOne(ctx, p, objs, opts)
			mu.Lock()
			ps = append(ps, found...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	ps.Sort()
	return ps
}

func offlineOne(ctx context.Context, p discover.Package, objs []Object, opts OfflineOptions) config.Problems {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "open-conduit-validate-")
	if err != nil {
		return config.Problems{unavailable(objs[0].Path, p.Name, err)}
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
		HandshakeTimeout: opts.Timeout,
		Configure: func() protocol.ConfigureParams {
			return protocol.ConfigureParams{KV: protocol.KVLayout{Stored: m.KVVersion, Declared: m.KVVersion}}
		},
		Backoff: session.Backoff{Min: time.Hour},
	})
	if err != nil {
		var ps config.Problems
		for _, o := range objs {
			ps = append(ps, unavailable(o.Path, p.Name, err))
		}
		return ps
	}
	defer s.Close(context.Background())
	return With(ctx, p.Name, func(ctx context.Context, vp protocol.ValidateParams) (protocol.ValidateResult, error) {
		var r protocol.ValidateResult
		err := s.Call(ctx, protocol.MethodValidate, vp, &r)
		return r, err
	}, objs)
}
