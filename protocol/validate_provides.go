package protocol

import (
	"slices"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Known values of the enumerated manifest members.
var (
	// ToolbeltLabels are the ways an executor reaches the toolbelt.
	ToolbeltLabels = []string{"none", "cli", "mcp", "sdk"}
	// ResourceModes are the workspace modes a resource provider offers.
	ResourceModes = []string{"shared", "work", "fresh"}
	// SettingTypes are the value types of an extension type's settings.
	SettingTypes = []string{"string", "boolean", "number", "strings"}
	// ExecutorControls are the optional executor methods.
	ExecutorControls = []string{ControlStop, ControlForget, ControlAttach, ControlContainerAttach, ControlLive, ControlInteractiveLaunch}
	// ExecutorPools are the values of executors[].pool: agent turns ("")
	// or jobs, which count against settings.job_concurrency.
	ExecutorPools = []string{"", "jobs"}
)

// checkProvides checks provides, member by member in Provides' field order.
func (c *manifestChecker) checkProvides() {
	p := &c.m.Provides
	c.checkConnections(p)
	c.checkExtensions(p)
	c.checkFamilies(p)
	if p.Webhooks && !slices.ContainsFunc(p.Extensions, func(e ExtensionType) bool { return e.Ingress }) {
		c.add("/provides/webhooks", "webhooks_ingress", "webhooks need an ingress type: declare an extensions[] entry with ingress true, or drop webhooks")
	}
	c.checkRoutes(p)
	c.checkWorkKinds(p)
	seen := map[string]bool{}
	for i, r := range p.Recurrences {
		c.dottedName(ptr("provides", "recurrences", i, "kind"), "recurrence", r.Kind, seen)
	}
	c.checkOperations(p)
	c.checkToolsets(p)
	seen = map[string]bool{}
	for i, t := range p.Targets {
		at := ptr("provides", "targets", i)
		if !isTargetKind(t) {
			c.add(at, "target_kind", "target kind %q must be lower-case letters, digits, '-' or '_'", t)
		}
		c.unique(at, "target kind", t, seen)
	}
	if p.DependencyFilter && !anyOpKind(p, OperationWait) {
		c.add("/provides/dependency_filter", "dependency_filter_wait", "dependency_filter needs a wait operation: declare one, or drop dependency_filter")
	}
	if p.EntryGated && (len(p.Operations) == 0 || len(p.Extensions) == 0) {
		c.add("/provides/entry_gated", "entry_gated", "entry_gated needs operations and an extension type: it offers the operations only with an entry of the type")
	}
	c.checkExecutors(p)
	c.checkResources(p)
	c.checkProviderTypes(p)
	seen = map[string]bool{}
	for i, t := range p.Tasks {
		c.identifierName(ptr("provides", "tasks", i, "name"), "task", t.Name, seen)
		if t.IntervalSeconds < 1 {
			c.add(ptr("provides", "tasks", i, "interval_seconds"), "task_interval", "task %q runs every %d seconds: the interval must be at least 1", t.Name, t.IntervalSeconds)
		}
	}
	seen = map[string]bool{}
	for i, ch := range p.Checks {
		at := ptr("provides", "checks", i, "name")
		if !IsIdentifier(ch.Name) {
			c.add(at, "check_name", "check %q is not an identifier: use a lower-case letter, then lower-case letters, digits, '-' or '_'", ch.Name)
		}
		c.unique(at, "check", ch.Name, seen)
	}
	seen = map[string]bool{}
	for i, s := range p.ExternalStores {
		c.identifierName(ptr("provides", "external_stores", i, "name"), "external store", s.Name, seen)
		if !slices.ContainsFunc(p.Connections, func(t ConnectionType) bool { return t.Type == s.Connection }) {
			c.add(ptr("provides", "external_stores", i, "connection"), "external_store_connection", "external store %q names connection type %q, which the package does not declare: declare it in connections", s.Name, s.Connection)
		}
	}
	c.checkSchemas(p)
	seen = map[string]bool{}
	for i, s := range p.Setup {
		c.identifierName(ptr("provides", "setup", i, "type"), "setup type", s.Type, seen)
	}
	seen = map[string]bool{}
	for i, pr := range p.Probes {
		c.dottedName(ptr("provides", "probes", i, "name"), "probe", pr.Name, seen)
	}
	c.checkPages(p)
}

func anyOpKind(p *Provides, kind string) bool {
	return slices.ContainsFunc(p.Operations, func(o Operation) bool { return o.Kind == kind })
}

func (c *manifestChecker) checkConnections(p *Provides) {
	seen := map[string]bool{}
	for i, t := range p.Connections {
		c.identifierName(ptr("provides", "connections", i, "type"), "connection type", t.Type, seen)
		c.checkFields(ptr("provides", "connections", i), t.Fields, true, nil)
	}
}

func (c *manifestChecker) checkExtensions(p *Provides) {
	seen := map[string]bool{}
	for i, t := range p.Extensions {
		base := ptr("provides", "extensions", i)
		c.identifierName(base+"/type", "extension type", t.Type, seen)
		switch {
		case t.Ingress && len(t.Families) == 0:
			c.add(base+"/families", "ingress_families", "ingress type %q declares no families: list the event families its sources produce", t.Type)
		case !t.Ingress && len(t.Families) > 0:
			c.add(base+"/families", "ingress_families", "extension type %q lists families but is not an ingress type: set ingress, or drop families", t.Type)
		}
		for j, f := range t.Families {
			if !c.m.Family(f) {
				c.add(ptr("provides", "extensions", i, "families", j), "extension_family", "extension type %q lists family %q, which the package does not declare: declare it in families", t.Type, f)
			}
		}
		c.checkSettings(base, t.Settings)
		if d := t.Describe; d != nil {
			if !IsIdentifier(d.List) {
				c.add(base+"/describe/list", "describe_field", "describe.list must name the entry's array field, an identifier")
			}
			if !IsIdentifier(d.Name) {
				c.add(base+"/describe/name", "describe_field", "describe.name must name the field that names each element, an identifier")
			}
			if d.Detail != "" && !IsIdentifier(d.Detail) {
				c.add(base+"/describe/detail", "describe_field", "describe.detail must name the field that details each element, an identifier")
			}
		}
		c.checkFields(base, t.Fields, false, t.Settings)
	}
}

func (c *manifestChecker) checkFamilies(p *Provides) {
	seen := map[string]bool{}
	for i, f := range p.Families {
		c.dottedName(ptr("provides", "families", i, "name"), "family", f.Name, seen)
		switch {
		case !f.Rederivable && strings.TrimSpace(f.Loss) == "":
			c.add(ptr("provides", "families", i, "loss"), "family_loss", "family %q cannot be re-derived by reconcile: state in loss what a missed delivery loses, or mark it rederivable", f.Name)
		case f.Rederivable && f.Loss != "":
			c.add(ptr("provides", "families", i, "loss"), "family_loss", "family %q is rederivable, so nothing is lost: drop loss", f.Name)
		}
	}
}

func (c *manifestChecker) checkRoutes(p *Provides) {
	seen := map[string]bool{}
	for i, r := range p.Routes {
		c.identifierName(ptr("provides", "routes", i, "handler"), "route handler", r.Handler, seen)
		c.checkFields(ptr("provides", "routes", i), r.Fields, false, nil)
	}
}

func (c *manifestChecker) checkWorkKinds(p *Provides) {
	seen := map[string]bool{}
	for i, k := range p.WorkKinds {
		c.dottedName(ptr("provides", "work_kinds", i, "kind"), "work kind", k.Kind, seen)
	}
	if len(p.WorkKinds) > 0 && len(p.Routes) == 0 {
		c.add("/provides/work_kinds", "work_kind_route", "work kinds need a route handler that creates their Work: declare one in routes")
	}
}

func (c *manifestChecker) checkOperations(p *Provides) {
	seen := map[string]bool{}
	for i, op := range p.Operations {
		base := ptr("provides", "operations", i)
		c.dottedName(base+"/name", "operation", op.Name, seen)
		switch op.Kind {
		case OperationHandler, OperationWait, OperationEmit:
		default:
			c.add(base+"/kind", "operation_kind", "operation %q has kind %q: use handler, wait or emit", op.Name, op.Kind)
		}
		if op.Commit && op.Kind != OperationEmit {
			c.add(base+"/commit", "operation_commit", "operation %q is a %s: only an emit may commit", op.Name, op.Kind)
		}
		switch {
		case op.Serves != "" && op.Kind != OperationHandler:
			c.add(base+"/serves", "operation_serves", "operation %q is a %s: only a handler serves a capability", op.Name, op.Kind)
		case op.Serves != "" && !isDotted(op.Serves):
			c.add(base+"/serves", "operation_serves_name", "operation %q serves %q: name the capability like an operation (ns.name)", op.Name, op.Serves)
		}
		if !isOneLine(op.Summary) || len(op.Summary) > MaxSummaryBytes {
			c.add(base+"/summary", "operation_summary", "operation %q's summary must be one line of at most %d bytes", op.Name, MaxSummaryBytes)
		}
		if len(op.Guidance) > MaxGuidanceBytes {
			c.add(base+"/guidance", "operation_guidance", "operation %q's guidance is %d bytes: keep it to at most %d", op.Name, len(op.Guidance), MaxGuidanceBytes)
		}
		if len(op.Input) > 0 && !isObjectSchema(op.Input) {
			c.add(base+"/input", "operation_input", "operation %q's input must be an object schema ({\"type\": \"object\", …}): its data is always an object", op.Name)
		}
	}
}

// isObjectSchema reports whether v is a JSON Schema whose type is object.
func isObjectSchema(v jsontext.Value) bool {
	if v.Kind() != '{' {
		return false
	}
	if is, sure := objectSchemaDirect(v); sure {
		return is
	}
	var s struct {
		Type jsontext.Value `json:"type"`
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return false
	}
	var t string
	return json.Unmarshal(s.Type, &t) == nil && t == "object"
}

// objectSchemaDirect is isObjectSchema without json, whose first decoding
// in a process is mostly reflection and fell on every extension's start
// (the manifest is checked before it is served). It is sure of a value the
// scanner takes whole (valid, no name twice) whose "type", if any, is not
// a string with an escape.
func objectSchemaDirect(v []byte) (is, sure bool) {
	all := valueScanner{b: v}
	if all.value(0) != len(v) {
		return false, false
	}
	sure = true
	end := walkObject(v, 0, func(name []byte, i int) int {
		if string(name) == "type" && v[i] == '"' {
			t, tEnd := rawString(v, i)
			is = tEnd >= 0 && string(t) == "object"
			sure = tEnd >= 0
		}
		return skipValue(v, i)
	})
	return is, sure && end == len(v)
}

func (c *manifestChecker) checkToolsets(p *Provides) {
	seen := map[string]bool{}
	for i, ts := range p.Toolsets {
		base := ptr("provides", "toolsets", i)
		c.dottedName(base+"/name", "toolset", ts.Name, seen)
		if len(ts.Operations) == 0 {
			c.add(base+"/operations", "toolset_operations", "toolset %q grants no operation: list at least one", ts.Name)
		}
		granted := map[string]bool{}
		for j, op := range ts.Operations {
			at := ptr("provides", "toolsets", i, "operations", j)
			_, declared := c.m.Operation(op.Name)
			switch {
			case !declared && !slices.Contains(BuiltinOperations, op.Name):
				c.add(at+"/name", "toolset_operation", "toolset %q grants %q, which is neither an operation the package declares nor a builtin (%s)", ts.Name, op.Name, strings.Join(BuiltinOperations, ", "))
			case granted[op.Name]:
				c.add(at+"/name", "toolset_operation_duplicate", "toolset %q grants %q more than once: remove the repeat", ts.Name, op.Name)
			}
			granted[op.Name] = true
			if op.Since < 0 {
				c.add(at+"/since", "toolset_since", "toolset %q grants %q since version %d: use 0 (the first) or a positive version", ts.Name, op.Name, op.Since)
			}
		}
	}
}

func (c *manifestChecker) checkExecutors(p *Provides) {
	names := map[string]bool{}
	for _, e := range p.Executors {
		names[e.Name] = true
	}
	seen := map[string]bool{}
	launch := map[string]bool{}
	for i, e := range p.Executors {
		base := ptr("provides", "executors", i)
		c.identifierName(base+"/name", "executor", e.Name, seen)
		labels := map[string]bool{}
		for j, l := range e.Capabilities.Toolbelt {
			if !slices.Contains(ToolbeltLabels, l) || labels[l] {
				c.add(ptr("provides", "executors", i, "capabilities", "toolbelt", j), "toolbelt_label", "executor %q toolbelt label %q must be one of %s, each listed once", e.Name, l, strings.Join(ToolbeltLabels, ", "))
			}
			labels[l] = true
		}
		controls := map[string]bool{}
		for j, ctl := range e.Controls {
			if !slices.Contains(ExecutorControls, ctl) || controls[ctl] {
				c.add(ptr("provides", "executors", i, "controls", j), "executor_control", "executor %q control %q must be one of %s, each listed once", e.Name, ctl, strings.Join(ExecutorControls, ", "))
			}
			controls[ctl] = true
		}
		if !slices.Contains(ExecutorPools, e.Pool) {
			c.add(base+"/pool", "executor_pool", "executor %q pool %q: use \"jobs\" or leave it empty for agent turns", e.Name, e.Pool)
		}
		if len(e.LaunchNames) > 0 && !controls[ControlInteractiveLaunch] {
			c.add(base+"/launch_names", "launch_names_control", "executor %q has launch_names but no interactive_launch control: add the control, or drop launch_names", e.Name)
		}
		for j, ln := range e.LaunchNames {
			at := ptr("provides", "executors", i, "launch_names", j)
			switch {
			case !IsIdentifier(ln):
				c.add(at, "launch_name", "executor %q launch name %q is not an identifier", e.Name, ln)
			case launch[ln] || names[ln]:
				c.add(at, "launch_name", "executor %q launch name %q is already a launch name or an executor name: launch names must be distinct from both", e.Name, ln)
			}
			launch[ln] = true
		}
		c.checkFields(base, e.Fields, false, nil)
	}
}

func (c *manifestChecker) checkResources(p *Provides) {
	seen := map[string]bool{}
	for i, r := range p.Resources {
		base := ptr("provides", "resources", i)
		c.identifierName(base+"/type", "resource type", r.Type, seen)
		modes := map[string]bool{}
		for j, mode := range r.Modes {
			if !slices.Contains(ResourceModes, mode) || modes[mode] {
				c.add(ptr("provides", "resources", i, "modes", j), "resource_mode", "resource type %q mode %q must be one of %s, each listed once", r.Type, mode, strings.Join(ResourceModes, ", "))
			}
			modes[mode] = true
		}
		c.checkSettings(base, r.Settings)
		c.checkFields(base, r.Fields, false, r.Settings)
	}
}

func (c *manifestChecker) checkProviderTypes(p *Provides) {
	seen := map[string]bool{}
	for i, s := range p.Sandboxes {
		c.identifierName(ptr("provides", "sandboxes", i, "type"), "sandbox type", s.Type, seen)
		c.checkFields(ptr("provides", "sandboxes", i), s.Fields, false, nil)
	}
	seen = map[string]bool{}
	for i, s := range p.Containers {
		c.identifierName(ptr("provides", "containers", i, "type"), "container type", s.Type, seen)
		c.checkFields(ptr("provides", "containers", i), s.Fields, false, nil)
	}
	seen = map[string]bool{}
	for i, s := range p.Tunnels {
		c.identifierName(ptr("provides", "tunnels", i, "type"), "tunnel type", s.Type, seen)
		c.checkFields(ptr("provides", "tunnels", i), s.Fields, false, nil)
	}
}

// checkSettings: distinct top-level field names, each of a known type with
// a default of that type, so the host can show an entry's value offline.
func (c *manifestChecker) checkSettings(base string, settings []Setting) {
	seen := map[string]bool{}
	for i, s := range settings {
		at := base + ptr("settings", i)
		switch {
		case !IsIdentifier(s.Field):
			c.add(at+"/field", "setting_field", "setting %q must name a top-level config field, an identifier", s.Field)
		case seen[s.Field]:
			c.add(at+"/field", "setting_duplicate", "setting %q is declared more than once: remove the repeat", s.Field)
		}
		seen[s.Field] = true
		if !slices.Contains(SettingTypes, s.Type) {
			c.add(at+"/type", "setting_type", "setting %q has type %q: use one of %s", s.Field, s.Type, strings.Join(SettingTypes, ", "))
		} else if len(s.Default) > 0 && !defaultHasType(s.Default, s.Type) {
			c.add(at+"/default", "setting_default", "setting %q's default is not a %s: give a default of the setting's type, or none", s.Field, s.Type)
		}
	}
}

// defaultHasType reports whether a setting default is a JSON value of typ.
func defaultHasType(v jsontext.Value, typ string) bool {
	switch typ {
	case "string":
		return v.Kind() == '"'
	case "boolean":
		return v.Kind() == 't' || v.Kind() == 'f'
	case "number":
		return v.Kind() == '0'
	case "strings":
		var xs []jsontext.Value
		if v.Kind() != '[' || json.Unmarshal(v, &xs) != nil {
			return false
		}
		return !slices.ContainsFunc(xs, func(x jsontext.Value) bool { return x.Kind() != '"' })
	}
	return false
}

// settingDefaultMatches reports whether a field's textual default states
// the same value as a setting's JSON default.
func settingDefaultMatches(text string, v jsontext.Value) bool {
	switch v.Kind() {
	case '"':
		var s string
		return json.Unmarshal(v, &s) == nil && s == text
	case '[':
		var xs []string
		return json.Unmarshal(v, &xs) == nil && strings.Join(xs, ",") == text
	}
	// Numbers and booleans compare as JSON values, so "1.0" matches 1.
	a, b := jsontext.Value(text), v.Clone()
	if a.Canonicalize() != nil || b.Canonicalize() != nil {
		return false
	}
	return string(a) == string(b)
}

// checkFields checks a type's described config fields. connection allows
// secret fields, whose names are keys of secret_refs and so are distinct
// apart from the config fields. settings, when given, must agree on defaults.
func (c *manifestChecker) checkFields(base string, fields []Field, connection bool, settings []Setting) {
	type key struct {
		name   string
		secret bool
	}
	seen := map[key]bool{}
	for i, f := range fields {
		at := base + ptr("fields", i)
		k := key{f.Name, f.Secret && connection}
		switch {
		case !IsIdentifier(f.Name):
			c.add(at+"/name", "field_name", "field %q must name a config field, an identifier", f.Name)
		case seen[k]:
			c.add(at+"/name", "field_duplicate", "field %q is described more than once: remove the repeat", f.Name)
		}
		seen[k] = true
		if !isOneLine(f.Help) || len(f.Help) > MaxFieldHelpBytes {
			c.add(at+"/help", "field_help", "field %q's help must be one line of at most %d bytes", f.Name, MaxFieldHelpBytes)
		}
		if f.Required && f.Default != "" {
			c.add(at+"/default", "field_required_default", "field %q is required, so a default is never used: drop the default or the required mark", f.Name)
		}
		c.checkOptions(at, f)
		if f.Secret && !connection {
			c.add(at+"/secret", "field_secret", "field %q is marked secret, which only a connection type's fields may be: keep credentials in a connection", f.Name)
		}
		if f.Default == "" {
			continue
		}
		for _, s := range settings {
			// A mistyped setting default is its own problem (setting_default).
			if s.Field == f.Name && len(s.Default) > 0 && defaultHasType(s.Default, s.Type) && !settingDefaultMatches(f.Default, s.Default) {
				c.add(at+"/default", "field_setting_default", "field %q's default differs from its setting's default: state it once, in the setting, and drop the field's", f.Name)
			}
		}
	}
}

// checkOptions: distinct, non-empty options that include the default. The
// message never quotes an option or default, which might be sensitive.
func (c *manifestChecker) checkOptions(at string, f Field) {
	seen := map[string]bool{}
	for j, o := range f.Options {
		if o == "" || seen[o] {
			c.add(at+ptr("options", j), "field_options", "field %q's options must be distinct and non-empty: option %d is empty or repeated", f.Name, j)
		}
		seen[o] = true
	}
	if len(f.Options) > 0 && f.Default != "" && !seen[f.Default] {
		c.add(at+"/default", "field_options", "field %q's default is not one of its options: add it to options or change the default", f.Name)
	}
}

// checkSchemas: bases are dotted names in the package's namespace with no
// version suffix (the version is appended), versions positive and strictly
// increasing, so the last is unambiguously the one written.
func (c *manifestChecker) checkSchemas(p *Provides) {
	seen := map[string]bool{}
	for i, s := range p.Schemas {
		base := ptr("provides", "schemas", i)
		c.dottedName(base+"/base", "schema base", s.Base, seen)
		if hasVersionSuffix(s.Base) {
			c.add(base+"/base", "schema_base", "schema base %q ends in a version suffix: declare the base alone and list versions in versions", s.Base)
		}
		if len(s.Versions) == 0 {
			c.add(base+"/versions", "schema_versions", "schema %q lists no versions: list the versions this release reads, the last being the one it writes", s.Base)
		}
		for j, v := range s.Versions {
			if v < 1 || j > 0 && v <= s.Versions[j-1] {
				c.add(ptr("provides", "schemas", i, "versions", j), "schema_versions", "schema %q versions must be positive and strictly increasing: version %d is not", s.Base, v)
			}
		}
	}
}

// hasVersionSuffix reports whether s ends in ".v" and digits, even a
// malformed version such as v0 or v01.
func hasVersionSuffix(s string) bool {
	i := strings.LastIndex(s, ".v")
	if i < 0 || i+2 == len(s) {
		return false
	}
	return strings.Trim(s[i+2:], "0123456789") == ""
}

// checkPages: at most MaxPages, each naming the package's own extension
// type, Work kind and route handler, since core draws the page from them.
func (c *manifestChecker) checkPages(p *Provides) {
	if len(p.Pages) == 0 {
		return
	}
	if !p.Actions {
		c.add("/provides/pages", "page_actions", "pages need actions: a page starts and drives its session through the package's actions, so declare actions")
	}
	if len(p.Pages) > MaxPages {
		c.add(ptr("provides", "pages", MaxPages), "page_count", "a package contributes at most %d pages: remove %d", MaxPages, len(p.Pages)-MaxPages)
	}
	seen := map[string]bool{}
	for i, pg := range p.Pages {
		base := ptr("provides", "pages", i)
		if !IsIdentifier(pg.ID) {
			c.add(base+"/id", "page_id", "page id %q becomes /pages/<id>: use an identifier", pg.ID)
		}
		c.unique(base+"/id", "page", pg.ID, seen)
		if pg.Title == "" || !isOneLine(pg.Title) || utf8.RuneCountInString(pg.Title) > MaxTitleChars {
			c.add(base+"/title", "page_title", "page %q needs a title of one line and at most %d characters", pg.ID, MaxTitleChars)
		}
		if !isOneLine(pg.Summary) || len(pg.Summary) > MaxSummaryBytes {
			c.add(base+"/summary", "page_summary", "page %q's summary must be one line of at most %d bytes", pg.ID, MaxSummaryBytes)
		}
		if !slices.ContainsFunc(p.Extensions, func(e ExtensionType) bool { return e.Type == pg.Entry }) {
			c.add(base+"/entry", "page_entry", "page %q's entry %q is not one of the package's extension types: name one it declares", pg.ID, pg.Entry)
		}
		if !slices.ContainsFunc(p.WorkKinds, func(k WorkKind) bool { return k.Kind == pg.WorkKind }) {
			c.add(base+"/work_kind", "page_work_kind", "page %q's work_kind %q is not one of the package's Work kinds: name one it declares", pg.ID, pg.WorkKind)
		}
		if strings.TrimSpace(pg.Start) == "" {
			c.add(base+"/start", "page_start", "page %q needs start, the action that opens a session", pg.ID)
		}
		composed := map[string]bool{}
		for j, a := range pg.Compose {
			if strings.TrimSpace(a) == "" || composed[a] {
				c.add(ptr("provides", "pages", i, "compose", j), "page_compose", "page %q's compose actions must be distinct and non-empty", pg.ID)
			}
			composed[a] = true
		}
		if pg.Route != "" && !slices.ContainsFunc(p.Routes, func(r Route) bool { return r.Handler == pg.Route }) {
			c.add(base+"/route", "page_route", "page %q's route %q is not one of the package's route handlers: name one it declares", pg.ID, pg.Route)
		}
	}
}
