package config

import (
	"sync"

	"github.com/open-conduit/open-conduit/protocol"
)

// Generation is one applied configuration, immutable once made: the daemon
// swaps one pointer to change it, so a reader never pairs one generation's
// number with another's config. Make it with a composite literal (or
// WithID) and never copy or change it afterwards.
type Generation struct {
	// ID is numbered by the daemon; 0 is the empty generation packages
	// start with.
	ID int64
	// Hash is Hash(Config): the same config, the same hash.
	Hash string
	// Text is the operator's text as applied.
	Text []byte
	// Config is the parsed configuration.
	Config *Config
	// Source is the file it was read from; "" for the embedded default.
	Source string
	// Dir is the directory a relative file: secret reference resolves
	// against: the config file's.
	Dir string
	// Problems are its warnings (a generation has no errors).
	Problems Problems

	// projections caches each package's Projection, computed once on
	// first use: *protocol.Manifest → func() *Projection.
	projections sync.Map
}

// For is what package m sees of this generation, computed once per
// manifest and shared afterwards. A nil generation projects nothing.
func (g *Generation) For(m *protocol.Manifest) *Projection {
	if g == nil {
		return Project(nil, m)
	}
	v, ok := g.projections.Load(m)
	if !ok {
		v, _ = g.projections.LoadOrStore(m, sync.OnceValue(func() *Projection { return Project(g.Config, m) }))
	}
	return v.(func() *Projection)()
}

// WithID is the same configuration numbered id, keeping the projections
// already computed: a candidate checked before the daemon numbered it
// becomes the running generation without computing them again.
func (g *Generation) WithID(id int64) *Generation {
	n := &Generation{ID: id, Hash: g.Hash, Text: g.Text, Config: g.Config, Source: g.Source, Dir: g.Dir, Problems: g.Problems}
	g.projections.Range(func(k, v any) bool {
		n.projections.Store(k, v)
		return true
	})
	return n
}
