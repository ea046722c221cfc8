package config

import (
	"strings"
	"testing"
)

// TestCheckConfigIsTheEnabledScopesAndOwnConnectionsWithoutSecrets: a
// doctor check's view holds the directory, the enabled scopes that use the
// package (a disabled one and one that does not use it are left out) and
// the connections its entries there name, config only: never a secret's
// value, name or reference, nor a binding's config or variables.
func TestCheckConfigIsTheEnabledScopesAndOwnConnectionsWithoutSecrets(t *testing.T) {
	alpha := testPkgs()[0]
	got := wire(t, Project(projectionConfig(), alpha).CheckConfig("/etc/oc"))
	want := `{"dir":"/etc/oc","scopes":[` +
		`{"id":"other","bindings":[{"name":"run","connection":"a-elsewhere"}]},` +
		`{"id":"zeta",` +
		`"entries":[{"scope":"zeta","type":"alpha","name":"a1","config":{"k":1},"connection":"a-main"},` +
		`{"scope":"zeta","type":"alpha","name":"a2","connection":"a-ungranted"}],` +
		`"routes":[{"handler":"alpha","binding":"run"},{"handler":"manual"}],` +
		`"bindings":[{"name":"run","executor":"alpha","toolbelt":"cli","operations":["alpha.do"],"connection":"a-bound"},` +
		`{"name":"beta-run","connection":"b-main"},{"name":"loose","connection":"a-ungranted"}]}],` +
		`"connections":[{"name":"a-main","type":"alpha","config":{"url":"https://a.example"}},{"name":"a-bound","type":"alpha"}]}`
	if got != want {
		t.Errorf("check config\n got %s\nwant %s", got, want)
	}
	for _, hidden := range []string{"env:", "file:", "SUPER_SECRET", "token", "secrets", "hidden", "HIDDEN", `"off"`, "beta-only"} {
		if strings.Contains(got, hidden) {
			t.Errorf("the check's view shows %q", hidden)
		}
	}
	// Negative control: the package's configure content does name the
	// secrets, so the view above left them out on purpose.
	if !strings.Contains(wire(t, Project(projectionConfig(), alpha).Configure()), "token") {
		t.Fatal("the configure content names no secret, so the check above proves nothing")
	}
}
