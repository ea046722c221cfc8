package packages

import (
	"fmt"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// ProvidesSummary says what a manifest provides, counted by kind, in one
// short line for extension list ("2 operations, 1 entry type"); "-" when
// it provides none of the counted kinds.
func ProvidesSummary(m *protocol.Manifest) string {
	p := m.Provides
	kinds := []struct {
		n          int
		one, other string
	}{
		{len(p.Operations), "operation", "operations"},
		{len(p.Extensions), "entry type", "entry types"},
		{len(p.Connections), "connection type", "connection types"},
		{len(p.Routes), "route handler", "route handlers"},
		{len(p.Executors), "executor", "executors"},
		{len(p.Resources), "resource type", "resource types"},
		{len(p.Sandboxes) + len(p.Containers) + len(p.Tunnels), "provider", "providers"},
		{len(p.Families), "family", "families"},
		{len(p.Tasks), "task", "tasks"},
		{len(p.Checks), "check", "checks"},
	}
	var parts []string
	for _, k := range kinds {
		switch {
		case k.n == 1:
			parts = append(parts, "1 "+k.one)
		case k.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", k.n, k.other))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// EntryTypes are the config entry types a manifest declares, the types an
// operator adds an entry of to use the package.
func EntryTypes(m *protocol.Manifest) []string {
	var out []string
	for _, e := range m.Provides.Extensions {
		out = append(out, e.Type)
	}
	return out
}
