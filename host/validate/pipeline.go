package validate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

// Ask is one package's part of a validation: its objects in the config
// being checked.
type Ask struct {
	// Config is the config being checked (offline starts take the
	// package's pass_env grant from it).
	Config   *config.Config
	Manifest *protocol.Manifest
	// Objects are the package's config objects, with their JSON paths.
	Objects []Object
}

// Asker has one package check its objects with validate and says what it
// found, each problem at its object's path. The daemon asks its running
// sessions; config check asks packages started for validate alone
// (Offline). The pipeline calls it for several packages at once.
type Asker func(ctx context.Context, a Ask) config.Problems

// Failed is a package that could not start, and why.
type Failed struct {
	Manifest *protocol.Manifest
	// Err carries a protocol code (start_failed, kv_downgrade, …).
	Err error
}

// Input is what one validation checks a config text against.
type Input struct {
	// Text is the config's text, as the operator wrote it.
	Text []byte
	// Source is the file Text was read from: "" for the embedded default
	// or a text sent without its file.
	Source string
	// Dir anchors relative file: secret references (default Source's
	// directory).
	Dir string
	// Running are the manifests of the packages that run, or offline,
	// that discovery found and can be started.
	Running []*protocol.Manifest
	// Failed are the packages that could not start. Their types stay
	// known, but every object of theirs is refused as
	// extension_unavailable, naming the package and why.
	Failed []Failed
	// Ask asks the packages; nil asks none (the offline rules alone).
	Ask Asker
}

// Run is the one validation pipeline: parse (every problem with its JSON
// path, line and column), the offline rules against the manifests
// (config.Check), then, when those found no error, each running package's
// own validate of its objects; problems are placed at their line and
// column in the text and sorted. It returns the checked configuration as
// an unnumbered generation (the daemon numbers it with WithID), or nil
// when there is any error, and every problem, warnings included.
func Run(ctx context.Context, in Input) (*config.Generation, config.Problems) {
	cfg, err := config.Parse(in.Text)
	if err != nil {
		ps, ok := err.(config.Problems)
		if !ok {
			ps = config.Problems{{Path: "/", Code: config.CodeInvalidJSON, Severity: config.Error, Message: err.Error()}}
		}
		return nil, ps
	}
	dir := in.Dir
	if dir == "" && in.Source != "" {
		dir = filepath.Dir(in.Source)
	}
	ms := append([]*protocol.Manifest(nil), in.Running...)
	for _, f := range in.Failed {
		ms = append(ms, f.Manifest)
	}
	ps := config.Check(cfg, ms)
	ps = append(ps, unavailableObjects(cfg, in.Failed)...)
	if len(ps.Errors()) == 0 && in.Ask != nil {
		ps = append(ps, askAll(ctx, cfg, in.Running, in.Ask)...)
	}
	ps.Locate(in.Text)
	ps.Sort()
	if len(ps.Errors()) > 0 {
		return nil, ps
	}
	return &config.Generation{Hash: config.Hash(cfg), Text: in.Text, Config: cfg, Source: in.Source, Dir: dir, Problems: ps}, ps
}

// askAll asks, at once, every package that has objects in cfg and serves
// validate, so adding packages does not add their checks' times together.
func askAll(ctx context.Context, cfg *config.Config, running []*protocol.Manifest, ask Asker) config.Problems {
	var (
		mu sync.Mutex
		ps config.Problems
		wg sync.WaitGroup
	)
	for _, m := range running {
		objs := config.Project(cfg, m).Objects()
		if len(objs) == 0 || !m.Enabled(protocol.MethodValidate) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			found := ask(ctx, Ask{Config: cfg, Manifest: m, Objects: objs})
			mu.Lock()
			ps = append(ps, found...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ps
}

// unavailableObjects refuses every object of a package that could not
// start: its entries and connections, and the routes, executors and
// operations of its that bindings name.
func unavailableObjects(cfg *config.Config, failed []Failed) config.Problems {
	var ps config.Problems
	for _, f := range failed {
		if f.Manifest == nil {
			continue
		}
		refuse := func(path, what, name string) {
			ps = append(ps, config.Problem{Path: path, Code: CodeExtensionUnavailable, Severity: config.Error,
				Message: fmt.Sprintf("%s %q belongs to package %s, which is not running (%s): %s. Fix the package and start it again (open-conduit extension restart %s, or restart the daemon), or remove this from the config",
					what, name, f.Manifest.Name, protocol.CodeOf(f.Err), errText(f.Err), f.Manifest.Name)})
		}
		for _, r := range references(cfg, f.Manifest) {
			refuse(r.path, r.what, r.name)
		}
	}
	return ps
}

// errText is the first line of why a package could not start, without the
// colon that introduces the lines after it.
func errText(err error) string {
	if err == nil {
		return "no reason recorded"
	}
	return strings.TrimRight(clip(err.Error()), ":. ")
}

// reference is a place in a config that names one of a package's
// declarations.
type reference struct{ path, what, name string }

// references are the places in cfg that name m's extension types,
// connection types, route handlers, executors and operations.
func references(cfg *config.Config, m *protocol.Manifest) []reference {
	var out []reference
	p := protocol.Pointer
	for i, s := range cfg.Scopes {
		for j, e := range s.Entries {
			if slices.ContainsFunc(m.Provides.Extensions, func(t protocol.ExtensionType) bool { return t.Type == e.Type }) {
				out = append(out, reference{p("scopes", i, "entries", j, "type"), "extension type", e.Type})
			}
		}
		for j, r := range s.Routes {
			if slices.ContainsFunc(m.Provides.Routes, func(x protocol.Route) bool { return x.Handler == r.Handler }) {
				out = append(out, reference{p("scopes", i, "routes", j, "handler"), "route handler", r.Handler})
			}
		}
		for j, b := range s.Bindings {
			if slices.ContainsFunc(m.Provides.Executors, func(x protocol.Executor) bool { return x.Name == b.Executor }) {
				out = append(out, reference{p("scopes", i, "bindings", j, "executor"), "executor", b.Executor})
			}
			for n, op := range b.Operations {
				if _, ok := m.Operation(op); ok {
					out = append(out, reference{p("scopes", i, "bindings", j, "operations", n), "operation", op})
				}
			}
		}
	}
	for i, cn := range cfg.Connections {
		if slices.ContainsFunc(m.Provides.Connections, func(t protocol.ConnectionType) bool { return t.Type == cn.Type }) {
			out = append(out, reference{p("connections", i, "type"), "connection type", cn.Type})
		}
	}
	return out
}
