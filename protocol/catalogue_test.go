package protocol

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// maximal declares every surface and every permission.
func maximal() *Manifest {
	m := &Manifest{
		Name:        "max",
		Protocol:    []int{1},
		Command:     []string{"max-extension"},
		Permissions: append([]string(nil), KnownPermissions...),
	}
	p := &m.Provides
	p.Connections = []ConnectionType{{Type: "max"}}
	p.Extensions = []ExtensionType{{Type: "max-feed", Ingress: true, Families: []string{"max.seen"}}}
	p.Families = []Family{{Name: "max.seen", Rederivable: true}}
	p.Webhooks = true
	p.Routes = []Route{{Handler: "max", Samples: true}}
	p.WorkKinds = []WorkKind{{Kind: "max.job", Trigger: true}}
	p.Recurrences = []Recurrence{{Kind: "max.daily"}}
	p.Operations = []Operation{
		{Name: "max.read", Kind: OperationHandler},
		{Name: "max.wait", Kind: OperationWait},
		{Name: "max.emit", Kind: OperationEmit, Commit: true},
	}
	p.Targets = []string{"job"}
	p.DependencyFilter, p.OperationGate, p.StartGate = true, true, true
	p.Render, p.SegmentEnd, p.Exporters = true, true, true
	p.ConfigCandidate, p.RunEnvironment, p.Annotate, p.Actions, p.Panels = true, true, true, true, true
	p.Executors = []Executor{{
		Name:         "max",
		Capabilities: Capabilities{Interrupt: true, Inject: true, Resume: true, Workspace: true, Sandbox: true, Container: true},
		Controls:     []string{ControlStop, ControlForget, ControlAttach, ControlContainerAttach, ControlLive, ControlInteractiveLaunch},
	}}
	p.Resources = []Resource{{Type: "max-ws", Sweep: true}}
	p.Sandboxes = []ProviderType{{Type: "max-box"}}
	p.Containers = []ContainerType{{Type: "max-ctr", Forward: true}}
	p.Tunnels = []ProviderType{{Type: "max-tunnel"}}
	p.Tasks = []Task{{Name: "max-sync", IntervalSeconds: 60}}
	p.Checks = []Check{{Name: "max-ok"}}
	p.Probes = []Probe{{Name: "max.status"}}
	p.Setup = []Setup{{Type: "max"}}
	return m
}

func TestEveryMethodIsReachable(t *testing.T) {
	cat := Catalogue()
	if len(cat) < 100 {
		t.Fatalf("the catalogue has %d methods; the seed names about 100", len(cat))
	}
	m := maximal()
	seen := map[string]bool{}
	for _, def := range cat {
		if seen[def.Name] {
			t.Errorf("%s catalogued twice", def.Name)
		}
		seen[def.Name] = true
		if _, ok := Surfaces[def.Surface]; !ok {
			t.Errorf("%s names unknown surface %q", def.Name, def.Surface)
		}
		if len(def.Users) == 0 {
			t.Errorf("%s names no shipped user", def.Name)
		}
		if def.Summary == "" {
			t.Errorf("%s has no summary", def.Name)
		}
		if !m.Enabled(def.Name) {
			t.Errorf("%s is not reachable from any manifest", def.Name)
		}
	}
}

func TestNoMethodIsEnabledWithoutItsPermission(t *testing.T) {
	gated := 0
	for _, def := range Catalogue() {
		if def.Permission == "" {
			continue
		}
		gated++
		m := maximal()
		var kept []string
		for _, p := range m.Permissions {
			if p != def.Permission {
				kept = append(kept, p)
			}
		}
		m.Permissions = kept
		if m.Enabled(def.Name) {
			t.Errorf("%s is enabled without the %s permission", def.Name, def.Permission)
		}
	}
	if gated < 10 {
		t.Fatalf("only %d permission-gated methods", gated)
	}
}

func TestMinimalManifestEnablesOnlyTheAlwaysSurface(t *testing.T) {
	m := &Manifest{Name: "min", Protocol: []int{1}, Command: []string{"min-extension"}}
	for _, def := range Catalogue() {
		want := def.Surface == SurfaceAlways && def.Permission == ""
		if got := m.Enabled(def.Name); got != want {
			t.Errorf("%s: enabled %v, want %v", def.Name, got, want)
		}
	}
	if m.Enabled("no.such.method") {
		t.Error("an uncatalogued method is enabled")
	}
}

func TestExampleManifestsEnableOnlyTheirSurfaces(t *testing.T) {
	data, err := os.ReadFile("testdata/ingress-support.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseAndValidateManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range m.EnabledMethods(HostToExtension) {
		if strings.HasPrefix(name, "executor.") || strings.HasPrefix(name, "provider.") {
			t.Errorf("the workspace-free ingress example enables %s", name)
		}
	}
	for _, want := range []string{"ingress.push", "route.match", "operation.call", "webhook.handle"} {
		if !m.Enabled(want) {
			t.Errorf("ingress-support should enable %s", want)
		}
	}
}

func TestInTransactionMethodsAreTheFour(t *testing.T) {
	var got []string
	for _, def := range Catalogue() {
		if def.InTransaction {
			if def.Direction != HostToExtension {
				t.Errorf("%s: in-transaction calls go from host to extension", def.Name)
			}
			got = append(got, def.Name)
		}
	}
	want := "dependency.filter emit.commit recurrence.next work_kind.trigger"
	if strings.Join(got, " ") != want {
		t.Fatalf("in-transaction methods %v, want %s", got, want)
	}
}

func TestCodeTableMapsBothWays(t *testing.T) {
	seenCode := map[string]bool{}
	seenErr := map[*Error]bool{}
	for _, e := range Codes() {
		if !ValidCode(e.Code) {
			t.Errorf("%q is not a valid code", e.Code)
		}
		if seenCode[e.Code] || seenErr[e.Err] {
			t.Errorf("%s appears twice", e.Code)
		}
		seenCode[e.Code], seenErr[e.Err] = true, true
		s, ok := Sentinel(e.Code)
		if !ok || s != e.Err || s.Code != e.Code {
			t.Errorf("Sentinel(%q) = %v", e.Code, s)
		}
		authored := Errorf(e.Err, "context for %s", e.Code)
		if CodeOf(authored) != e.Code || !errors.Is(authored, e.Err) {
			t.Errorf("%s does not round-trip through Errorf", e.Code)
		}
		wrapped := errors.Join(errors.New("outer"), authored)
		if CodeOf(wrapped) != e.Code {
			t.Errorf("%s lost when wrapped", e.Code)
		}
		if rpc := RPCCode(e.Code); rpc != RPCAuthored {
			if CodeForRPC(rpc) != e.Code {
				t.Errorf("reserved code %d names %q, want %q", rpc, CodeForRPC(rpc), e.Code)
			}
		}
		for _, other := range Codes() {
			if other.Code != e.Code && errors.Is(authored, other.Err) {
				t.Errorf("%s matches %s", e.Code, other.Code)
			}
		}
	}
	for _, code := range []string{"invalid", "unsupported", "unauthorized", "undeclared", "not_found", "conflict",
		"causal_limit", "not_adoptable", "not_accepting", "nothing_to_attach", "not_live", "resource_setup_failed",
		"resource_not_found", "resource_exhausted", "sandbox_denied", "sandbox_unavailable", "container_running",
		"container_unconfirmed", "retry_after", "unsupported_protocol_version", "reentrant_call", "overloaded",
		"cancelled", "shutting_down", "internal"} {
		if !seenCode[code] {
			t.Errorf("the seed's code %q is missing", code)
		}
	}
	if CodeOf(errors.New("plain")) != "" {
		t.Error("an unauthored error has a code")
	}
}

func TestNegotiatePicksTheHighestCommonVersion(t *testing.T) {
	cases := []struct {
		ours, theirs []int
		want         int
	}{
		{[]int{1}, []int{1}, 1},
		{[]int{1, 2, 3}, []int{2, 3, 4}, 3},
		{[]int{1, 2}, []int{2, 1}, 2},
		{[]int{1}, []int{2, 3}, 0},
		{[]int{1}, nil, 0},
	}
	for _, tc := range cases {
		got, err := Negotiate(tc.ours, tc.theirs)
		if tc.want == 0 {
			if !errors.Is(err, ErrUnsupportedProtocolVersion) {
				t.Errorf("%v/%v: want unsupported_protocol_version, got %d %v", tc.ours, tc.theirs, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v/%v: got %d %v, want %d", tc.ours, tc.theirs, got, err, tc.want)
		}
	}
}

func TestNamespaces(t *testing.T) {
	for _, tc := range []struct {
		ns   string
		want bool
	}{{"notes", true}, {"notes.index", true}, {"notes.", false}, {"notesx", false}, {"other", false}, {"", false}} {
		if Namespace("notes", tc.ns) != tc.want {
			t.Errorf("Namespace(notes, %q) != %v", tc.ns, tc.want)
		}
	}
	for _, tc := range []struct {
		src  string
		want bool
	}{{"notes", true}, {"notes/feed", true}, {"notes/", false}, {"notes.feed", false}, {"other/feed", false}} {
		if SourceNamespace("notes", tc.src) != tc.want {
			t.Errorf("SourceNamespace(notes, %q) != %v", tc.src, tc.want)
		}
	}
}
