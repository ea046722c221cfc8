package protocol

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// baseManifest is a small manifest that declares one of nearly every
// surface, so each rejection below is a single mutation of something valid.
func baseManifest() *Manifest {
	return &Manifest{
		Name:        "acme",
		Version:     "1.0.0",
		Title:       "Acme",
		Summary:     "Everything a manifest can declare, once.",
		Protocol:    []int{1},
		Command:     []string{"acme-extension"},
		KVVersion:   1,
		Permissions: []string{PermissionProbes},
		Playbooks:   "playbooks",
		Provides: Provides{
			Connections: []ConnectionType{{Type: "acme", Fields: []Field{
				{Name: "url", Default: "https://acme.example"},
				{Name: "token", Required: true, Secret: true},
			}}},
			Extensions: []ExtensionType{{
				Type: "acme", Ingress: true, Families: []string{"acme.event"},
				Settings: []Setting{{Field: "team", Type: "string", Default: jsontext.Value(`"red"`)}},
				Describe: &Describe{List: "jobs", Name: "name"},
				Fields:   []Field{{Name: "team", Default: "red", Options: []string{"red", "blue"}}},
			}},
			Families:    []Family{{Name: "acme.event", Rederivable: true}},
			Webhooks:    true,
			Routes:      []Route{{Handler: "acme", Fields: []Field{{Name: "channel", Help: "Where to listen."}}}},
			WorkKinds:   []WorkKind{{Kind: "acme.task"}},
			Recurrences: []Recurrence{{Kind: "acme.daily"}},
			Operations: []Operation{
				{Name: "acme.hello", Kind: OperationHandler, Input: jsontext.Value(`{"type":"object"}`)},
				{Name: "acme.wait", Kind: OperationWait},
				{Name: "acme.emit", Kind: OperationEmit, Commit: true},
			},
			Toolsets:         []Toolset{{Name: "acme.agent", Operations: []ToolsetOperation{{Name: "acme.hello"}, {Name: "wait"}}}},
			Targets:          []string{"job"},
			DependencyFilter: true,
			EntryGated:       true,
			Executors: []Executor{{
				Name:         "acme",
				Capabilities: Capabilities{Toolbelt: []string{"cli"}},
				Controls:     []string{ControlStop, ControlInteractiveLaunch},
				LaunchNames:  []string{"acme-shell"},
			}},
			Resources:      []Resource{{Type: "acme-workspace", Modes: []string{"shared", "work"}}},
			Sandboxes:      []ProviderType{{Type: "acme-sandbox"}},
			Containers:     []ContainerType{{Type: "acme-container"}},
			Tunnels:        []ProviderType{{Type: "acme-tunnel"}},
			Tasks:          []Task{{Name: "acme-sync", IntervalSeconds: 60}},
			Checks:         []Check{{Name: "acme-auth"}},
			ExternalStores: []ExternalStore{{Name: "acme-store", Connection: "acme"}},
			Schemas:        []Schema{{Base: "acme.event", Versions: []int{1, 2}}},
			Actions:        true,
			Setup:          []Setup{{Type: "acme"}},
			Probes:         []Probe{{Name: "acme.probe"}},
			Pages:          []Page{{ID: "acme", Title: "Acme", Entry: "acme", WorkKind: "acme.task", Start: "acme.start"}},
		},
	}
}

// rejection is one broken rule: a single mutation of baseManifest, as Go
// (edit) or as JSON text (text), and the problem it must produce.
type rejection struct {
	name string
	edit func(m *Manifest)
	text func(doc []byte) []byte
	// rule is the expected Problem.Rule; "" means ParseManifest itself
	// refuses, and path must then appear in its message.
	rule, path string
	// newer marks a refusal as needing a newer host rather than invalid.
	newer bool
}

func TestManifestRejections(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	p := func(f func(p *Provides)) func(*Manifest) { return func(m *Manifest) { f(&m.Provides) } }
	cases := []rejection{
		// Unknown fields: refused while parsing, as needing a newer host.
		{name: "storage capability", text: addMember("/provides", "storage", `{"kind":"pebble"}`), path: "/provides/storage", newer: true},
		{name: "semantic executor label", text: addMember("/provides/executors/0/capabilities", "coding", `true`), path: "/provides/executors/0/capabilities/coding", newer: true},
		{name: "unknown top-level field", text: addMember("", "homepage", `"https://acme.example"`), path: "/homepage", newer: true},
		{name: "wrong member type", text: addMember("", "protocol", `"1"`), path: "/protocol"},

		{name: "no supported protocol", edit: func(m *Manifest) { m.Protocol = []int{99} }, rule: "protocol_version", path: "/protocol"},
		{name: "empty protocol", edit: func(m *Manifest) { m.Protocol = nil }, rule: "protocol_version", path: "/protocol"},
		{name: "name not identifier", edit: func(m *Manifest) { m.Name = "Acme" }, rule: "name_identifier", path: "/name"},
		{name: "name too long", edit: func(m *Manifest) { m.Name = "a" + long(64) }, rule: "name_identifier", path: "/name"},
		{name: "name reserved", text: rename("os"), rule: "name_reserved", path: "/name"},
		{name: "name reserved open-conduit", text: rename("open-conduit"), rule: "name_reserved", path: "/name"},
		{name: "version two lines", edit: func(m *Manifest) { m.Version = "1.0\n2.0" }, rule: "version_line", path: "/version"},
		{name: "title too long", edit: func(m *Manifest) { m.Title = long(65) }, rule: "title_line", path: "/title"},
		{name: "title two lines", edit: func(m *Manifest) { m.Title = "Acme\nCorp" }, rule: "title_line", path: "/title"},
		{name: "summary two lines", edit: func(m *Manifest) { m.Summary = "a\nb" }, rule: "summary_line", path: "/summary"},
		{name: "command empty", edit: func(m *Manifest) { m.Command = nil }, rule: "command_empty", path: "/command"},
		{name: "command word empty", edit: func(m *Manifest) { m.Command = []string{""} }, rule: "command_empty", path: "/command/0"},
		{name: "command absolute", edit: func(m *Manifest) { m.Command = []string{"/usr/bin/acme"} }, rule: "command_outside", path: "/command/0"},
		{name: "command escapes", edit: func(m *Manifest) { m.Command = []string{"bin/../../acme"} }, rule: "command_outside", path: "/command/0"},
		{name: "command backslash escape", edit: func(m *Manifest) { m.Command = []string{`..\acme.exe`} }, rule: "command_outside", path: "/command/0"},
		{name: "command open-conduit other args", edit: func(m *Manifest) { m.Command = []string{"open-conduit", "serve"} }, rule: "command_host_run", path: "/command"},
		{name: "command host-run other name", edit: func(m *Manifest) { m.Command = HostRunCommand("other") }, rule: "command_host_run", path: "/command"},
		{name: "kv_version negative", edit: func(m *Manifest) { m.KVVersion = -1 }, rule: "kv_version", path: "/kv_version"},
		{name: "unknown permission", edit: func(m *Manifest) { m.Permissions = append(m.Permissions, "network") }, rule: "unknown_permission", path: "/permissions/1", newer: true},
		{name: "duplicate permission", edit: func(m *Manifest) { m.Permissions = append(m.Permissions, PermissionProbes) }, rule: "duplicate_permission", path: "/permissions/1"},
		{name: "playbooks escape", edit: func(m *Manifest) { m.Playbooks = "../playbooks" }, rule: "playbooks_outside", path: "/playbooks"},
		{name: "playbooks absolute", edit: func(m *Manifest) { m.Playbooks = "/etc" }, rule: "playbooks_outside", path: "/playbooks"},

		{name: "identifier-shaped outside namespace", edit: p(func(p *Provides) { p.Routes[0].Handler = "other" }), rule: "identifier_name", path: "/provides/routes/0/handler"},
		{name: "identifier-shaped bare prefix", edit: p(func(p *Provides) { p.Tasks[0].Name = "acme-" }), rule: "identifier_name", path: "/provides/tasks/0/name"},
		{name: "identifier-shaped not identifier", edit: p(func(p *Provides) { p.Tunnels[0].Type = "Acme-Tunnel" }), rule: "identifier_name", path: "/provides/tunnels/0/type"},
		{name: "dotted outside namespace", edit: p(func(p *Provides) { p.Recurrences[0].Kind = "other.daily" }), rule: "dotted_name", path: "/provides/recurrences/0/kind"},
		{name: "dotted without dot", edit: p(func(p *Provides) { p.Probes[0].Name = "acme" }), rule: "dotted_name", path: "/provides/probes/0/name"},
		{name: "dotted empty segment", edit: p(func(p *Provides) { p.Probes[0].Name = "acme..probe" }), rule: "dotted_name", path: "/provides/probes/0/name"},
		{name: "duplicate declaration", edit: p(func(p *Provides) { p.Recurrences = append(p.Recurrences, p.Recurrences[0]) }), rule: "duplicate_name", path: "/provides/recurrences/1/kind"},
		{name: "duplicate executor", edit: p(func(p *Provides) { p.Executors = append(p.Executors, Executor{Name: "acme"}) }), rule: "duplicate_name", path: "/provides/executors/1/name"},

		{name: "family loss missing", edit: p(func(p *Provides) { p.Families[0].Rederivable = false }), rule: "family_loss", path: "/provides/families/0/loss"},
		{name: "family loss on rederivable", edit: p(func(p *Provides) { p.Families[0].Loss = "nothing" }), rule: "family_loss", path: "/provides/families/0/loss"},
		{name: "ingress without families", edit: p(func(p *Provides) { p.Extensions[0].Families = nil }), rule: "ingress_families", path: "/provides/extensions/0/families"},
		{name: "ingress family undeclared", edit: p(func(p *Provides) { p.Extensions[0].Families = append(p.Extensions[0].Families, "acme.other") }), rule: "extension_family", path: "/provides/extensions/0/families/1"},
		{name: "webhooks without ingress", edit: p(func(p *Provides) { p.Extensions[0].Ingress = false; p.Extensions[0].Families = nil }), rule: "webhooks_ingress", path: "/provides/webhooks"},
		{name: "work kinds without route", edit: p(func(p *Provides) { p.Routes = nil }), rule: "work_kind_route", path: "/provides/work_kinds"},

		{name: "operation kind", edit: p(func(p *Provides) { p.Operations[0].Kind = "query" }), rule: "operation_kind", path: "/provides/operations/0/kind"},
		{name: "operation commit on handler", edit: p(func(p *Provides) { p.Operations[0].Commit = true }), rule: "operation_commit", path: "/provides/operations/0/commit"},
		{name: "operation serves on wait", edit: p(func(p *Provides) { p.Operations[1].Serves = "tracker.issue" }), rule: "operation_serves", path: "/provides/operations/1/serves"},
		{name: "operation serves name", edit: p(func(p *Provides) { p.Operations[0].Serves = "issues" }), rule: "operation_serves_name", path: "/provides/operations/0/serves"},
		{name: "operation summary too long", edit: p(func(p *Provides) { p.Operations[0].Summary = long(201) }), rule: "operation_summary", path: "/provides/operations/0/summary"},
		{name: "operation summary two lines", edit: p(func(p *Provides) { p.Operations[0].Summary = "a\nb" }), rule: "operation_summary", path: "/provides/operations/0/summary"},
		{name: "operation guidance too long", edit: p(func(p *Provides) { p.Operations[0].Guidance = long(4097) }), rule: "operation_guidance", path: "/provides/operations/0/guidance"},
		{name: "operation input not object", edit: p(func(p *Provides) { p.Operations[0].Input = jsontext.Value(`{"type":"string"}`) }), rule: "operation_input", path: "/provides/operations/0/input"},
		{name: "operation input array", text: addMember("/provides/operations/0", "input", `[]`), rule: "operation_input", path: "/provides/operations/0/input"},

		{name: "target kind shape", edit: p(func(p *Provides) { p.Targets[0] = "Job" }), rule: "target_kind", path: "/provides/targets/0"},
		{name: "target declared twice", edit: p(func(p *Provides) { p.Targets = append(p.Targets, "job") }), rule: "duplicate_name", path: "/provides/targets/1"},
		{name: "dependency filter without wait", edit: p(func(p *Provides) { p.Operations = slices.Delete(p.Operations, 1, 2) }), rule: "dependency_filter_wait", path: "/provides/dependency_filter"},
		{name: "entry gated without extension type", edit: p(func(p *Provides) { p.Extensions, p.Webhooks, p.Pages = nil, false, nil }), rule: "entry_gated", path: "/provides/entry_gated"},

		{name: "toolset name", edit: p(func(p *Provides) { p.Toolsets[0].Name = "agent" }), rule: "dotted_name", path: "/provides/toolsets/0/name"},
		{name: "toolset declared twice", edit: p(func(p *Provides) { p.Toolsets = append(p.Toolsets, p.Toolsets[0]) }), rule: "duplicate_name", path: "/provides/toolsets/1/name"},
		{name: "toolset grants nothing", edit: p(func(p *Provides) { p.Toolsets[0].Operations = nil }), rule: "toolset_operations", path: "/provides/toolsets/0/operations"},
		{name: "toolset grants undeclared", edit: p(func(p *Provides) {
			p.Toolsets[0].Operations = append(p.Toolsets[0].Operations, ToolsetOperation{Name: "acme.missing"})
		}), rule: "toolset_operation", path: "/provides/toolsets/0/operations/2/name"},
		{name: "toolset grants twice", edit: p(func(p *Provides) {
			p.Toolsets[0].Operations = append(p.Toolsets[0].Operations, ToolsetOperation{Name: "acme.hello", Since: 2})
		}), rule: "toolset_operation_duplicate", path: "/provides/toolsets/0/operations/2/name"},
		{name: "toolset since negative", edit: p(func(p *Provides) { p.Toolsets[0].Operations[0].Since = -1 }), rule: "toolset_since", path: "/provides/toolsets/0/operations/0/since"},

		{name: "toolbelt label", edit: p(func(p *Provides) { p.Executors[0].Capabilities.Toolbelt = []string{"cli", "ssh"} }), rule: "toolbelt_label", path: "/provides/executors/0/capabilities/toolbelt/1"},
		{name: "executor control unknown", edit: p(func(p *Provides) { p.Executors[0].Controls = append(p.Executors[0].Controls, "pause") }), rule: "executor_control", path: "/provides/executors/0/controls/2"},
		{name: "executor control twice", edit: p(func(p *Provides) { p.Executors[0].Controls = append(p.Executors[0].Controls, ControlStop) }), rule: "executor_control", path: "/provides/executors/0/controls/2"},
		{name: "executor pool", edit: p(func(p *Provides) { p.Executors[0].Pool = "batch" }), rule: "executor_pool", path: "/provides/executors/0/pool"},
		{name: "launch names without control", edit: p(func(p *Provides) { p.Executors[0].Controls = []string{ControlStop} }), rule: "launch_names_control", path: "/provides/executors/0/launch_names"},
		{name: "launch name is executor name", edit: p(func(p *Provides) { p.Executors[0].LaunchNames = []string{"acme"} }), rule: "launch_name", path: "/provides/executors/0/launch_names/0"},
		{name: "launch name twice", edit: p(func(p *Provides) { p.Executors[0].LaunchNames = []string{"shell", "shell"} }), rule: "launch_name", path: "/provides/executors/0/launch_names/1"},
		{name: "launch name not identifier", edit: p(func(p *Provides) { p.Executors[0].LaunchNames = []string{"Shell"} }), rule: "launch_name", path: "/provides/executors/0/launch_names/0"},
		{name: "resource mode unknown", edit: p(func(p *Provides) { p.Resources[0].Modes = []string{"scratch"} }), rule: "resource_mode", path: "/provides/resources/0/modes/0"},
		{name: "resource mode twice", edit: p(func(p *Provides) { p.Resources[0].Modes = []string{"work", "work"} }), rule: "resource_mode", path: "/provides/resources/0/modes/1"},
		{name: "task interval", edit: p(func(p *Provides) { p.Tasks[0].IntervalSeconds = 0 }), rule: "task_interval", path: "/provides/tasks/0/interval_seconds"},
		{name: "check name", edit: p(func(p *Provides) { p.Checks[0].Name = "Auth" }), rule: "check_name", path: "/provides/checks/0/name"},
		{name: "external store connection", edit: p(func(p *Provides) { p.ExternalStores[0].Connection = "acme-db" }), rule: "external_store_connection", path: "/provides/external_stores/0/connection"},

		{name: "setting field", edit: p(func(p *Provides) { p.Extensions[0].Settings[0].Field = "auth.team" }), rule: "setting_field", path: "/provides/extensions/0/settings/0/field"},
		{name: "setting twice", edit: p(func(p *Provides) {
			p.Extensions[0].Settings = append(p.Extensions[0].Settings, Setting{Field: "team", Type: "string"})
		}), rule: "setting_duplicate", path: "/provides/extensions/0/settings/1/field"},
		{name: "setting type", edit: p(func(p *Provides) { p.Extensions[0].Settings[0].Type = "object" }), rule: "setting_type", path: "/provides/extensions/0/settings/0/type"},
		{name: "setting default type", edit: p(func(p *Provides) { p.Extensions[0].Settings[0].Default = jsontext.Value(`7`) }), rule: "setting_default", path: "/provides/extensions/0/settings/0/default"},
		{name: "resource setting default type", edit: p(func(p *Provides) {
			p.Resources[0].Settings = []Setting{{Field: "paths", Type: "strings", Default: jsontext.Value(`["a", 1]`)}}
		}), rule: "setting_default", path: "/provides/resources/0/settings/0/default"},
		{name: "describe list", edit: p(func(p *Provides) { p.Extensions[0].Describe.List = "" }), rule: "describe_field", path: "/provides/extensions/0/describe/list"},
		{name: "describe name", edit: p(func(p *Provides) { p.Extensions[0].Describe.Name = "" }), rule: "describe_field", path: "/provides/extensions/0/describe/name"},

		{name: "field name", edit: p(func(p *Provides) { p.Routes[0].Fields[0].Name = "" }), rule: "field_name", path: "/provides/routes/0/fields/0/name"},
		{name: "field twice", edit: p(func(p *Provides) { p.Routes[0].Fields = append(p.Routes[0].Fields, Field{Name: "channel"}) }), rule: "field_duplicate", path: "/provides/routes/0/fields/1/name"},
		{name: "secret field twice", edit: p(func(p *Provides) {
			p.Connections[0].Fields = append(p.Connections[0].Fields, Field{Name: "token", Secret: true})
		}), rule: "field_duplicate", path: "/provides/connections/0/fields/2/name"},
		{name: "field help too long", edit: p(func(p *Provides) { p.Routes[0].Fields[0].Help = long(401) }), rule: "field_help", path: "/provides/routes/0/fields/0/help"},
		{name: "field help two lines", edit: p(func(p *Provides) { p.Routes[0].Fields[0].Help = "a\nb" }), rule: "field_help", path: "/provides/routes/0/fields/0/help"},
		{name: "field required with default", edit: p(func(p *Provides) { p.Connections[0].Fields[0].Required = true }), rule: "field_required_default", path: "/provides/connections/0/fields/0/default"},
		{name: "field default not an option", edit: p(func(p *Provides) {
			p.Executors[0].Fields = []Field{{Name: "model", Default: "huge", Options: []string{"small", "large"}}}
		}), rule: "field_options", path: "/provides/executors/0/fields/0/default"},
		{name: "field option empty", edit: p(func(p *Provides) { p.Extensions[0].Fields[0].Options = []string{"red", ""} }), rule: "field_options", path: "/provides/extensions/0/fields/0/options/1"},
		{name: "field option twice", edit: p(func(p *Provides) { p.Extensions[0].Fields[0].Options = []string{"red", "red"} }), rule: "field_options", path: "/provides/extensions/0/fields/0/options/1"},
		{name: "secret field off a connection", edit: p(func(p *Provides) { p.Routes[0].Fields[0].Secret = true }), rule: "field_secret", path: "/provides/routes/0/fields/0/secret"},
		{name: "field default differs from setting", edit: p(func(p *Provides) { p.Extensions[0].Fields[0].Default = "blue" }), rule: "field_setting_default", path: "/provides/extensions/0/fields/0/default"},

		{name: "schema base outside namespace", edit: p(func(p *Provides) { p.Schemas[0].Base = "other.event" }), rule: "dotted_name", path: "/provides/schemas/0/base"},
		{name: "schema base with version", edit: p(func(p *Provides) { p.Schemas[0].Base = "acme.event.v1" }), rule: "schema_base", path: "/provides/schemas/0/base"},
		{name: "schema versions empty", edit: p(func(p *Provides) { p.Schemas[0].Versions = nil }), rule: "schema_versions", path: "/provides/schemas/0/versions"},
		{name: "schema version zero", edit: p(func(p *Provides) { p.Schemas[0].Versions = []int{0, 1} }), rule: "schema_versions", path: "/provides/schemas/0/versions/0"},
		{name: "schema versions decrease", edit: p(func(p *Provides) { p.Schemas[0].Versions = []int{2, 1} }), rule: "schema_versions", path: "/provides/schemas/0/versions/1"},
		{name: "schema versions repeat", edit: p(func(p *Provides) { p.Schemas[0].Versions = []int{1, 1} }), rule: "schema_versions", path: "/provides/schemas/0/versions/1"},

		{name: "pages without actions", edit: p(func(p *Provides) { p.Actions = false }), rule: "page_actions", path: "/provides/pages"},
		{name: "too many pages", edit: p(func(p *Provides) {
			for _, id := range []string{"b", "c", "d", "e"} {
				pg := p.Pages[0]
				pg.ID = id
				p.Pages = append(p.Pages, pg)
			}
		}), rule: "page_count", path: "/provides/pages/4"},
		{name: "page id", edit: p(func(p *Provides) { p.Pages[0].ID = "Setup page" }), rule: "page_id", path: "/provides/pages/0/id"},
		{name: "page id twice", edit: p(func(p *Provides) { p.Pages = append(p.Pages, p.Pages[0]) }), rule: "duplicate_name", path: "/provides/pages/1/id"},
		{name: "page title", edit: p(func(p *Provides) { p.Pages[0].Title = "" }), rule: "page_title", path: "/provides/pages/0/title"},
		{name: "page summary", edit: p(func(p *Provides) { p.Pages[0].Summary = "a\nb" }), rule: "page_summary", path: "/provides/pages/0/summary"},
		{name: "page entry", edit: p(func(p *Provides) { p.Pages[0].Entry = "setup" }), rule: "page_entry", path: "/provides/pages/0/entry"},
		{name: "page work kind", edit: p(func(p *Provides) { p.Pages[0].WorkKind = "acme.other" }), rule: "page_work_kind", path: "/provides/pages/0/work_kind"},
		{name: "page start", edit: p(func(p *Provides) { p.Pages[0].Start = "" }), rule: "page_start", path: "/provides/pages/0/start"},
		{name: "page compose", edit: p(func(p *Provides) { p.Pages[0].Compose = []string{"acme.say", "acme.say"} }), rule: "page_compose", path: "/provides/pages/0/compose/1"},
		{name: "page route", edit: p(func(p *Provides) { p.Pages[0].Route = "acme-other" }), rule: "page_route", path: "/provides/pages/0/route"},
	}

	t.Run("base is valid", func(t *testing.T) {
		if ps := baseManifest().Problems(); len(ps) != 0 {
			t.Fatalf("base manifest has problems: %v", ps)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := mutate(t, tc)
			if tc.rule == "" {
				checkParseRefusal(t, tc, err)
				return
			}
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			ps := m.Problems()
			if len(ps) != 1 || ps[0].Rule != tc.rule || ps[0].Path != tc.path {
				t.Fatalf("problems = %v, want exactly one %s at %s", ps, tc.rule, tc.path)
			}
			if ps[0].Message == "" || strings.ContainsAny(ps[0].Message, "\r\n") {
				t.Errorf("message %q is not one non-empty line", ps[0].Message)
			}
			err = m.Validate()
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("Validate() = %v, want *ManifestError", err)
			}
			if got := errors.Is(err, ErrNeedsNewerHost); got != tc.newer {
				t.Errorf("errors.Is(err, ErrNeedsNewerHost) = %v, want %v", got, tc.newer)
			}
			if got := errors.Is(err, ErrInvalid); got == tc.newer {
				t.Errorf("errors.Is(err, ErrInvalid) = %v, want %v", got, !tc.newer)
			}
			if !strings.Contains(err.Error(), tc.path+": ") {
				t.Errorf("error %q does not name %s", err, tc.path)
			}
		})
	}
	if len(cases) < 35 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// mutate applies one rejection's mutation to the base manifest and parses
// the result strictly, as a package's file would be.
func mutate(t *testing.T, tc rejection) (*Manifest, error) {
	t.Helper()
	m := baseManifest()
	if tc.edit != nil {
		tc.edit(m)
	}
	doc, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if tc.text != nil {
		doc = tc.text(doc)
	}
	return ParseManifest(doc)
}

func checkParseRefusal(t *testing.T, tc rejection, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("ParseManifest accepted the manifest")
	}
	want := ErrInvalid
	if tc.newer {
		want = ErrNeedsNewerHost
	}
	if !errors.Is(err, want) {
		t.Errorf("ParseManifest error %q (code %s), want %s", err, CodeOf(err), want.Code)
	}
	if !strings.Contains(err.Error(), tc.path) {
		t.Errorf("ParseManifest error %q does not name %s", err, tc.path)
	}
}

// addMember returns a text mutation that sets member key of the object at
// pointer to the raw JSON value.
func addMember(pointer, key, value string) func([]byte) []byte {
	return func(doc []byte) []byte {
		var root any
		if err := json.Unmarshal(doc, &root); err != nil {
			panic(err)
		}
		node := root
		for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			switch n := node.(type) {
			case map[string]any:
				if seg != "" {
					node = n[seg]
				}
			case []any:
				i := 0
				for _, c := range seg {
					i = i*10 + int(c-'0')
				}
				node = n[i]
			}
		}
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			panic(err)
		}
		node.(map[string]any)[key] = v
		out, err := json.Marshal(root, json.Deterministic(true))
		if err != nil {
			panic(err)
		}
		return out
	}
}

// rename moves every name the base declares to another package name, so the
// name rules can be tested without namespace problems.
func rename(name string) func([]byte) []byte {
	return func(doc []byte) []byte {
		return []byte(strings.ReplaceAll(string(doc), `"acme`, `"`+name))
	}
}

func TestManifestAccepts(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *Manifest)
	}{
		{"host-run command", func(m *Manifest) { m.Command = HostRunCommand("acme") }},
		{"nested relative command", func(m *Manifest) { m.Command = []string{"bin/./acme-extension", "--stdio"} }},
		{"a file named open-conduit in the package", func(m *Manifest) { m.Command = []string{"./open-conduit", "serve"} }},
		{"no title, summary or version", func(m *Manifest) { m.Title, m.Summary, m.Version = "", "", "" }},
		{"title of 64 characters", func(m *Manifest) { m.Title = strings.Repeat("é", 64) }},
		{"secret key beside a config field of the same name", func(m *Manifest) {
			m.Provides.Connections[0].Fields = append(m.Provides.Connections[0].Fields, Field{Name: "token", Help: "the token's label"})
		}},
		{"field default equal to setting default", func(m *Manifest) {
			m.Provides.Resources[0].Settings = []Setting{{Field: "depth", Type: "number", Default: jsontext.Value(`1`)}}
			m.Provides.Resources[0].Fields = []Field{{Name: "depth", Default: "1.0"}}
		}},
		{"every known permission", func(m *Manifest) { m.Permissions = slices.Clone(KnownPermissions) }},
		{"every control and pool", func(m *Manifest) {
			m.Provides.Executors[0].Controls = slices.Clone(ExecutorControls)
			m.Provides.Executors[0].Pool = "jobs"
		}},
		{"four pages", func(m *Manifest) {
			for _, id := range []string{"b", "c", "d"} {
				pg := m.Provides.Pages[0]
				pg.ID = id
				m.Provides.Pages = append(m.Provides.Pages, pg)
			}
		}},
		{"toolset granting builtins", func(m *Manifest) {
			m.Provides.Toolsets[0].Operations = []ToolsetOperation{{Name: "read_context"}, {Name: "declare_outcome", Since: 3}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := baseManifest()
			tc.edit(m)
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProblemsReportsEveryProblem(t *testing.T) {
	m := baseManifest()
	m.Protocol = []int{7}
	m.Permissions = []string{"network", PermissionProbes}
	m.Provides.Operations[0].Kind = "query"
	m.Provides.Tasks[0].IntervalSeconds = 0
	want := []Problem{
		{Path: "/protocol", Rule: "protocol_version"},
		{Path: "/permissions/0", Rule: "unknown_permission"},
		{Path: "/provides/operations/0/kind", Rule: "operation_kind"},
		{Path: "/provides/tasks/0/interval_seconds", Rule: "task_interval"},
	}
	got := m.Problems()
	if len(got) != len(want) {
		t.Fatalf("got %d problems %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Rule != want[i].Rule {
			t.Errorf("problem %d = %s %s, want %s %s", i, got[i].Rule, got[i].Path, want[i].Rule, want[i].Path)
		}
	}
	if again := m.Problems(); !slices.Equal(again, got) {
		t.Errorf("Problems is not deterministic: %v then %v", got, again)
	}

	err := m.Validate()
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrNeedsNewerHost) {
		t.Errorf("mixed problems should match both ErrInvalid and ErrNeedsNewerHost: %v", err)
	}
	if CodeOf(err) != CodeNeedsNewerHost {
		t.Errorf("CodeOf = %q, want %q: upgrading is the first thing to try", CodeOf(err), CodeNeedsNewerHost)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 1+len(want) {
		t.Errorf("error should list one problem per line:\n%s", err)
	}
	if errors.Is(err, ErrConflict) {
		t.Error("a ManifestError matched ErrConflict")
	}
}

func TestExampleManifests(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"executor-workspace.json", "ingress-support.json", "scheduled-reporting.json"}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("testdata lacks %s", w)
		}
	}
	loaded := map[string]*Manifest{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseAndValidateManifest(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, indent := range []bool{false, true} {
				out, err := m.Marshal()
				if indent {
					out, err = m.MarshalIndent()
				}
				if err != nil {
					t.Fatal(err)
				}
				again, err := ParseAndValidateManifest(out)
				if err != nil {
					t.Fatalf("re-parse: %v", err)
				}
				if !m.SemanticallyEqual(again) || m.Diff(again) != "" {
					t.Errorf("round trip changed the manifest at %q", m.Diff(again))
				}
			}
			loaded[filepath.Base(f)] = m
		})
	}

	// Each example shows the workload shape the seed names.
	if m := loaded["ingress-support.json"]; m != nil {
		p := m.Provides
		if len(p.Executors)+len(p.Resources) != 0 || !p.Webhooks || len(p.Families) == 0 || len(p.Routes) == 0 ||
			!slices.ContainsFunc(p.Extensions, func(e ExtensionType) bool { return e.Ingress }) {
			t.Error("ingress-support should be a workspace-free ingress with families, webhooks and routes, and no executor or resource")
		}
	}
	if m := loaded["executor-workspace.json"]; m != nil {
		p := m.Provides
		ok := len(p.Executors) == 1 && len(p.Resources) == 1
		if ok {
			e := p.Executors[0]
			ok = e.Capabilities.Resume && e.Capabilities.Inject && e.Capabilities.Workspace
			for _, c := range []string{ControlStop, ControlForget, ControlAttach} {
				ok = ok && slices.Contains(e.Controls, c)
			}
		}
		if !ok {
			t.Error("executor-workspace should have a resumable, injectable executor with stop, forget and attach, and one workspace provider")
		}
	}
	if m := loaded["scheduled-reporting.json"]; m != nil {
		p := m.Provides
		op, _ := m.Operation("reports.publish")
		if len(p.Recurrences) == 0 || op.Kind != OperationEmit || !op.Commit ||
			!slices.ContainsFunc(p.WorkKinds, func(k WorkKind) bool { return k.Standing && k.Trigger }) {
			t.Error("scheduled-reporting should have recurrences, standing Work with a trigger and a committed emit")
		}
	}
}

// schemaManifest reads acme.event versions 2, 3 and 5 (4 was dropped) and
// writes 5.
func schemaManifest() *Manifest {
	return &Manifest{Name: "acme", Provides: Provides{Schemas: []Schema{
		{Base: "acme.event", Versions: []int{2, 3, 5}},
		{Base: "acme.job.state", Versions: []int{1}},
	}}}
}

func TestPayloadStatus(t *testing.T) {
	m := schemaManifest()
	cases := []struct {
		schema string
		want   PayloadStatus
	}{
		{"", PayloadForeign},
		{"github.pr.v1", PayloadForeign},
		{"acme-x.event.v1", PayloadForeign},
		{"acmex.event.v5", PayloadForeign},
		{"acme.event.v5", PayloadCurrent},
		{"acme.job.state.v1", PayloadCurrent},
		{"acme.event.v3", PayloadUpcast},
		{"acme.event.v2", PayloadUpcast},
		{"acme.event.v1", PayloadRetired},
		{"acme.event.v4", PayloadRetired},
		{"acme.event.v6", PayloadNewer},
		{"acme.event.v12", PayloadNewer},
		{"acme.event", PayloadUndeclared},
		{"acme.event.v", PayloadUndeclared},
		{"acme.event.v0", PayloadUndeclared},
		{"acme.event.v05", PayloadUndeclared},
		{"acme.other.v1", PayloadUndeclared},
		{"acme.v1", PayloadUndeclared},
		{"acme", PayloadUndeclared},
	}
	for _, tc := range cases {
		if got := m.PayloadStatus(tc.schema); got != tc.want {
			t.Errorf("PayloadStatus(%q) = %s, want %s", tc.schema, got, tc.want)
		}
	}
	readable := map[PayloadStatus]bool{PayloadForeign: true, PayloadCurrent: true, PayloadUpcast: true,
		PayloadRetired: false, PayloadNewer: false, PayloadUndeclared: false}
	for s, want := range readable {
		if s.Readable() != want {
			t.Errorf("%s.Readable() = %v, want %v", s, !want, want)
		}
	}
}

func TestCheckWrite(t *testing.T) {
	m := schemaManifest()
	cases := []struct {
		schema string
		status PayloadStatus
		// want names what the refusal must mention; "" means accepted.
		want []string
	}{
		{"", PayloadForeign, nil},
		{"acme.event.v5", PayloadCurrent, nil},
		{"acme.job.state.v1", PayloadCurrent, nil},
		{"acme.event.v3", PayloadUpcast, []string{`"acme.event.v3"`, `"acme.event.v5"`}},
		{"acme.event.v1", PayloadRetired, []string{`"acme.event.v1"`, `"acme.event.v5"`}},
		{"acme.event.v6", PayloadNewer, []string{`"acme.event.v6"`, `"acme.event.v5"`}},
		{"github.pr.v1", PayloadForeign, []string{`"github.pr.v1"`, "acme.event.v5, acme.job.state.v1"}},
		{"acme.other.v1", PayloadUndeclared, []string{`"acme.other"`, "provides.schemas"}},
		{"acme.event", PayloadUndeclared, []string{`"acme.event"`, "<base>.v<N>"}},
	}
	for _, tc := range cases {
		if got := m.PayloadStatus(tc.schema); got != tc.status {
			t.Errorf("PayloadStatus(%q) = %s, want %s", tc.schema, got, tc.status)
		}
		err := m.CheckWrite(tc.schema)
		if tc.want == nil {
			if err != nil {
				t.Errorf("CheckWrite(%q) = %v, want nil", tc.schema, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnreadableSchema) {
			t.Errorf("CheckWrite(%q) = %v, want unreadable_schema", tc.schema, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckWrite(%q) = %q, want it to mention %s", tc.schema, err, w)
			}
		}
	}
	bare := &Manifest{Name: "acme"}
	if err := bare.CheckWrite("acme.event.v1"); !errors.Is(err, ErrUnreadableSchema) || !strings.Contains(err.Error(), `"acme."`) {
		t.Errorf("a manifest with no schemas should refuse every payload and say to declare one: %v", err)
	}
}

func TestSchemaID(t *testing.T) {
	if got := SchemaID("acme.event", 3); got != "acme.event.v3" {
		t.Errorf("SchemaID = %q", got)
	}
	base, v, ok := ParseSchemaID("acme.event.v12")
	if !ok || base != "acme.event" || v != 12 {
		t.Errorf("ParseSchemaID = %q %d %v", base, v, ok)
	}
	for _, bad := range []string{"", ".v1", "acme.event", "acme.event.v", "acme.event.v0", "acme.event.v1x", "acme.event.v-1"} {
		if _, _, ok := ParseSchemaID(bad); ok {
			t.Errorf("ParseSchemaID(%q) accepted", bad)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for _, s := range []string{"a", "acme", "acme-tools_2", "a" + strings.Repeat("b", 63)} {
		if !IsIdentifier(s) {
			t.Errorf("IsIdentifier(%q) = false", s)
		}
	}
	for _, s := range []string{"", "1acme", "-acme", "Acme", "ac me", "acme.x", "a" + strings.Repeat("b", 64), "ácme"} {
		if IsIdentifier(s) {
			t.Errorf("IsIdentifier(%q) = true", s)
		}
	}
	for _, s := range ReservedNames {
		if !IsIdentifier(s) || !IsReservedName(s) {
			t.Errorf("reserved name %q", s)
		}
	}
}
