package packages

import (
	"context"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/validate"
	"github.com/open-conduit/open-conduit/protocol"
)

// Use is one place a config uses a package: a problem the config would
// have without it, at its JSON path.
type Use struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitzero"`
	Column  int    `json:"column,omitzero"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Uses lists where the config text uses the package name among pkgs (the
// manifests of every package the daemon would run): the errors the offline
// rules find once it is gone that they did not find with it (an entry or
// connection of its type, a route to its handler, a binding to its
// executor …). No package is started. A config with no uses of it stays
// valid after removal, so removal is safe.
func Uses(ctx context.Context, text []byte, source string, pkgs []*protocol.Manifest, name string) []Use {
	var without []*protocol.Manifest
	for _, m := range pkgs {
		if m.Name != name {
			without = append(without, m)
		}
	}
	before := errorKeys(offline(ctx, text, source, pkgs))
	var uses []Use
	for _, p := range offline(ctx, text, source, without) {
		if p.Severity != config.Error || before[p.Path+"\x00"+p.Code] {
			continue
		}
		uses = append(uses, Use{Path: p.Path, Line: p.Line, Column: p.Column, Code: p.Code, Message: p.Message})
	}
	return uses
}

func offline(ctx context.Context, text []byte, source string, ms []*protocol.Manifest) config.Problems {
	_, ps := validate.Run(ctx, validate.Input{Text: text, Source: source, Running: ms})
	return ps
}

func errorKeys(ps config.Problems) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		if p.Severity == config.Error {
			out[p.Path+"\x00"+p.Code] = true
		}
	}
	return out
}
