package discover

import (
	"fmt"
	"sort"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// HostNames are the names the host registers itself: its route handler,
// its builtin operations and its reserved package names. No package may
// declare them.
var HostNames = map[string]bool{"manual": true}

func init() {
	for _, n := range protocol.BuiltinOperations {
		HostNames[n] = true
	}
	for _, n := range protocol.ReservedNames {
		HostNames[n] = true
	}
}

// Conflict is one name claimed twice.
type Conflict struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Owners []string `json:"owners"`
}

func (c Conflict) String() string {
	return fmt.Sprintf("%s %q is claimed by %s", c.Kind, c.Name, strings.Join(c.Owners, " and "))
}

// ConflictError refuses a whole set of packages: either every package is
// admitted or none is.
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	lines := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		lines[i] = c.String()
	}
	return "registration_conflict: " + strings.Join(lines, "; ") + ": rename what the packages declare"
}

// names lists every name a manifest registers, by kind.
func names(m *protocol.Manifest) map[string][]string {
	p := m.Provides
	out := map[string][]string{"package": {m.Name}}
	add := func(kind string, ns ...string) { out[kind] = append(out[kind], ns...) }
	for _, c := range p.Connections {
		add("config type", c.Type)
	}
	for _, e := range p.Extensions {
		add("config type", e.Type)
	}
	for _, r := range p.Routes {
		add("route handler", r.Handler)
	}
	for _, e := range p.Executors {
		add("executor", e.Name)
	}
	for _, r := range p.Resources {
		add("resource type", r.Type)
	}
	for _, s := range p.Sandboxes {
		add("sandbox type", s.Type)
	}
	for _, c := range p.Containers {
		add("container type", c.Type)
	}
	for _, t := range p.Tunnels {
		add("tunnel type", t.Type)
	}
	for _, o := range p.Operations {
		add("operation", o.Name)
	}
	for _, f := range p.Families {
		add("family", f.Name)
	}
	for _, w := range p.WorkKinds {
		add("work kind", w.Kind)
	}
	for _, r := range p.Recurrences {
		add("recurrence", r.Kind)
	}
	for _, s := range p.Schemas {
		add("schema", s.Base)
	}
	return out
}

// CheckConflicts checks a whole set against the host's own names and
// against each other. It returns nil, or a *ConflictError naming every
// conflict, in which case none of the set may be admitted.
func CheckConflicts(pkgs []Package) error {
	type key struct{ kind, name string }
	owners := map[key][]string{}
	for _, p := range pkgs {
		for kind, ns := range names(p.Manifest) {
			for _, n := range ns {
				k := key{kind, n}
				owners[k] = append(owners[k], p.Name)
			}
		}
	}
	var conflicts []Conflict
	for k, os := range owners {
		if HostNames[k.name] && k.kind != "package" {
			conflicts = append(conflicts, Conflict{Kind: k.kind, Name: k.name, Owners: append([]string{"open-conduit"}, os...)})
			continue
		}
		if len(os) > 1 {
			conflicts = append(conflicts, Conflict{Kind: k.kind, Name: k.name, Owners: os})
		}
	}
	if len(conflicts) == 0 {
		return nil
	}
	sort.Slice(conflicts, func(i, j int) bool {
		if conflicts[i].Kind != conflicts[j].Kind {
			return conflicts[i].Kind < conflicts[j].Kind
		}
		return conflicts[i].Name < conflicts[j].Name
	})
	return &ConflictError{Conflicts: conflicts}
}
