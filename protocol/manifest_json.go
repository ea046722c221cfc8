package protocol

import (
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The manifest goes out once per process start, in the initialize answer,
// and json's first encoding of it is mostly reflection: building the field
// tables of the manifest's two dozen types took 200-350 µs of a fresh
// extension process, a tenth of its start. The encoders here write the
// manifest directly, byte for byte what json.Marshal writes (fields in
// declaration order, omitempty and omitzero as json applies them), and
// leave anything they are not sure of (a string that is not valid UTF-8, a
// raw value json would reformat) to json.Marshal. A test fills every field
// of every type and compares the two, so a field added to a type and not
// here fails it.

// AppendJSON appends the manifest as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails.
func (m Manifest) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	w := objectWriter{b: b, ok: true}
	w.open()
	m.members(&w)
	w.close()
	if !w.ok {
		return appendMarshal(b[:start], m)
	}
	return w.b, nil
}

// AppendJSON appends the result as JSON to b, byte for byte what
// json.Marshal writes, and fails as json.Marshal fails.
func (r InitializeResult) AppendJSON(b []byte) ([]byte, error) {
	start := len(b)
	w := objectWriter{b: b, ok: true}
	w.open()
	w.num("protocol_version", int64(r.ProtocolVersion))
	w.name("manifest")
	w.open()
	r.Manifest.members(&w)
	w.close()
	w.close()
	if !w.ok {
		return appendMarshal(b[:start], r)
	}
	return w.b, nil
}

func (m *Manifest) members(w *objectWriter) {
	w.str("name", m.Name)
	w.optStr("version", m.Version)
	w.optStr("title", m.Title)
	w.optStr("summary", m.Summary)
	w.ints("protocol", m.Protocol)
	w.strs("command", m.Command)
	w.optNum("kv_version", int64(m.KVVersion))
	w.optStrs("permissions", m.Permissions)
	w.optStr("playbooks", m.Playbooks)
	if !isZero(&m.Provides) {
		w.name("provides")
		w.open()
		m.Provides.members(w)
		w.close()
	}
}

func (p *Provides) members(w *objectWriter) {
	w.objects("connections", len(p.Connections), func(i int) { p.Connections[i].members(w) })
	w.objects("extensions", len(p.Extensions), func(i int) { p.Extensions[i].members(w) })
	w.objects("families", len(p.Families), func(i int) { p.Families[i].members(w) })
	w.flag("webhooks", p.Webhooks)
	w.objects("routes", len(p.Routes), func(i int) { p.Routes[i].members(w) })
	w.objects("work_kinds", len(p.WorkKinds), func(i int) { p.WorkKinds[i].members(w) })
	w.objects("recurrences", len(p.Recurrences), func(i int) { p.Recurrences[i].members(w) })
	w.objects("operations", len(p.Operations), func(i int) { p.Operations[i].members(w) })
	w.objects("toolsets", len(p.Toolsets), func(i int) { p.Toolsets[i].members(w) })
	w.optStrs("targets", p.Targets)
	w.flag("dependency_filter", p.DependencyFilter)
	w.flag("entry_gated", p.EntryGated)
	w.flag("entry_named", p.EntryNamed)
	w.flag("operation_gate", p.OperationGate)
	w.flag("start_gate", p.StartGate)
	w.objects("executors", len(p.Executors), func(i int) { p.Executors[i].members(w) })
	w.objects("resources", len(p.Resources), func(i int) { p.Resources[i].members(w) })
	w.objects("sandboxes", len(p.Sandboxes), func(i int) { p.Sandboxes[i].members(w) })
	w.objects("containers", len(p.Containers), func(i int) { p.Containers[i].members(w) })
	w.objects("tunnels", len(p.Tunnels), func(i int) { p.Tunnels[i].members(w) })
	w.objects("tasks", len(p.Tasks), func(i int) { p.Tasks[i].members(w) })
	w.objects("checks", len(p.Checks), func(i int) { p.Checks[i].members(w) })
	w.objects("external_stores", len(p.ExternalStores), func(i int) { p.ExternalStores[i].members(w) })
	w.objects("schemas", len(p.Schemas), func(i int) { p.Schemas[i].members(w) })
	w.flag("exporters", p.Exporters)
	w.flag("render", p.Render)
	w.flag("annotate", p.Annotate)
	w.flag("actions", p.Actions)
	w.flag("panels", p.Panels)
	w.flag("run_environment", p.RunEnvironment)
	w.flag("segment_end", p.SegmentEnd)
	w.flag("config_candidate", p.ConfigCandidate)
	w.objects("setup", len(p.Setup), func(i int) { p.Setup[i].members(w) })
	w.objects("probes", len(p.Probes), func(i int) { p.Probes[i].members(w) })
	w.objects("pages", len(p.Pages), func(i int) { p.Pages[i].members(w) })
}

func (f *Field) members(w *objectWriter) {
	w.str("name", f.Name)
	w.optStr("help", f.Help)
	w.optStr("default", f.Default)
	w.flag("required", f.Required)
	w.optStrs("options", f.Options)
	w.flag("secret", f.Secret)
}

func (s *Setting) members(w *objectWriter) {
	w.str("field", s.Field)
	w.str("type", s.Type)
	w.raw("default", s.Default)
}

func (d *Describe) members(w *objectWriter) {
	w.str("list", d.List)
	w.str("name", d.Name)
	w.optStr("detail", d.Detail)
}

func (c *ConnectionType) members(w *objectWriter) {
	w.str("type", c.Type)
	w.objects("fields", len(c.Fields), func(i int) { c.Fields[i].members(w) })
}

func (e *ExtensionType) members(w *objectWriter) {
	w.str("type", e.Type)
	w.flag("ingress", e.Ingress)
	w.optStrs("families", e.Families)
	w.objects("settings", len(e.Settings), func(i int) { e.Settings[i].members(w) })
	if e.Describe != nil {
		w.name("describe")
		w.open()
		e.Describe.members(w)
		w.close()
	}
	w.objects("fields", len(e.Fields), func(i int) { e.Fields[i].members(w) })
}

func (f *Family) members(w *objectWriter) {
	w.str("name", f.Name)
	w.flag("rederivable", f.Rederivable)
	w.optStr("loss", f.Loss)
}

func (r *Route) members(w *objectWriter) {
	w.str("handler", r.Handler)
	w.flag("samples", r.Samples)
	w.flag("binding", r.Binding)
	w.objects("fields", len(r.Fields), func(i int) { r.Fields[i].members(w) })
}

func (k *WorkKind) members(w *objectWriter) {
	w.str("kind", k.Kind)
	w.flag("standing", k.Standing)
	w.flag("trigger", k.Trigger)
	w.flag("timed", k.Timed)
	w.flag("run_once", k.RunOnce)
}

func (r *Recurrence) members(w *objectWriter) {
	w.str("kind", r.Kind)
}

func (o *Operation) members(w *objectWriter) {
	w.str("name", o.Name)
	w.str("kind", o.Kind)
	w.optStr("summary", o.Summary)
	w.optStr("guidance", o.Guidance)
	w.raw("input", o.Input)
	w.flag("commit", o.Commit)
	w.optStr("serves", o.Serves)
}

func (t *Toolset) members(w *objectWriter) {
	w.str("name", t.Name)
	w.name("operations")
	w.array(len(t.Operations), func(i int) { t.Operations[i].members(w) })
}

func (t *ToolsetOperation) members(w *objectWriter) {
	w.str("name", t.Name)
	w.optNum("since", int64(t.Since))
}

func (e *Executor) members(w *objectWriter) {
	w.str("name", e.Name)
	if !isZero(&e.Capabilities) {
		w.name("capabilities")
		w.open()
		e.Capabilities.members(w)
		w.close()
	}
	w.optStrs("controls", e.Controls)
	w.optStr("pool", e.Pool)
	w.optStrs("launch_names", e.LaunchNames)
	w.flag("resource_mode", e.ResourceMode)
	w.flag("playbook", e.Playbook)
	w.flag("folder_config", e.FolderConfig)
	w.objects("fields", len(e.Fields), func(i int) { e.Fields[i].members(w) })
}

func (c *Capabilities) members(w *objectWriter) {
	w.flag("interrupt", c.Interrupt)
	w.flag("inject", c.Inject)
	w.flag("resume", c.Resume)
	w.flag("workspace", c.Workspace)
	w.optStrs("toolbelt", c.Toolbelt)
	w.flag("sandbox", c.Sandbox)
	w.flag("container", c.Container)
}

func (r *Resource) members(w *objectWriter) {
	w.str("type", r.Type)
	w.optStrs("modes", r.Modes)
	w.flag("mode_default", r.ModeDefault)
	w.flag("sandbox", r.Sandbox)
	w.flag("sweep", r.Sweep)
	w.objects("settings", len(r.Settings), func(i int) { r.Settings[i].members(w) })
	w.objects("fields", len(r.Fields), func(i int) { r.Fields[i].members(w) })
}

func (p *ProviderType) members(w *objectWriter) {
	w.str("type", p.Type)
	w.objects("fields", len(p.Fields), func(i int) { p.Fields[i].members(w) })
}

func (c *ContainerType) members(w *objectWriter) {
	w.str("type", c.Type)
	w.flag("forward", c.Forward)
	w.objects("fields", len(c.Fields), func(i int) { c.Fields[i].members(w) })
}

func (t *Task) members(w *objectWriter) {
	w.str("name", t.Name)
	w.num("interval_seconds", int64(t.IntervalSeconds))
}

func (c *Check) members(w *objectWriter) {
	w.str("name", c.Name)
	w.flag("deep", c.Deep)
	w.flag("offline", c.Offline)
}

func (e *ExternalStore) members(w *objectWriter) {
	w.str("name", e.Name)
	w.str("connection", e.Connection)
}

func (s *Schema) members(w *objectWriter) {
	w.str("base", s.Base)
	w.ints("versions", s.Versions)
}

func (s *Setup) members(w *objectWriter) {
	w.str("type", s.Type)
	w.flag("first_run", s.FirstRun)
}

func (p *Probe) members(w *objectWriter) {
	w.str("name", p.Name)
	w.optStr("summary", p.Summary)
	w.optStrs("args", p.Args)
}

func (p *Page) members(w *objectWriter) {
	w.str("id", p.ID)
	w.str("title", p.Title)
	w.optStr("summary", p.Summary)
	w.str("entry", p.Entry)
	w.str("work_kind", p.WorkKind)
	w.str("start", p.Start)
	w.optStrs("compose", p.Compose)
	w.optStr("route", p.Route)
}

// isZero is json's omitzero test for a struct without an IsZero method:
// every field its zero value. reflect answers it without the field tables
// json builds.
func isZero[T any](v *T) bool {
	return reflect.ValueOf(v).Elem().IsZero()
}

// objectWriter appends the members of JSON objects as json.Marshal writes
// them. ok turns false at the first value it is not sure of; the caller then
// starts over with json.Marshal.
type objectWriter struct {
	b  []byte
	ok bool
	// first is set right after an object or array opens: the next member or
	// element takes no comma.
	first bool
}

func (w *objectWriter) open() {
	w.b = append(w.b, '{')
	w.first = true
}

func (w *objectWriter) close() {
	w.b = append(w.b, '}')
	w.first = false
}

// name appends a member's name (one of the literals above, which need no
// escaping) and its colon.
func (w *objectWriter) name(n string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, '"', ':')
}

// str is a string member; optStr one with omitempty.
func (w *objectWriter) str(n, v string) {
	w.name(n)
	w.quote(v)
}

func (w *objectWriter) optStr(n, v string) {
	if v != "" {
		w.str(n, v)
	}
}

func (w *objectWriter) quote(v string) {
	var ok bool
	if w.b, ok = appendString(w.b, v); !ok {
		w.ok = false
	}
}

// flag is a bool member with omitzero.
func (w *objectWriter) flag(n string, v bool) {
	if v {
		w.name(n)
		w.b = append(w.b, "true"...)
	}
}

// num is an integer member; optNum one with omitzero.
func (w *objectWriter) num(n string, v int64) {
	w.name(n)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *objectWriter) optNum(n string, v int64) {
	if v != 0 {
		w.num(n, v)
	}
}

// strs is a []string member, nil written as [] as json writes it; optStrs
// one with omitempty.
func (w *objectWriter) strs(n string, v []string) {
	w.name(n)
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.quote(s)
	}
	w.b = append(w.b, ']')
}

func (w *objectWriter) optStrs(n string, v []string) {
	if len(v) > 0 {
		w.strs(n, v)
	}
}

// ints is an []int member, nil written as [].
func (w *objectWriter) ints(n string, v []int) {
	w.name(n)
	w.b = append(w.b, '[')
	for i, x := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = strconv.AppendInt(w.b, int64(x), 10)
	}
	w.b = append(w.b, ']')
}

// raw is a jsontext.Value member with omitzero, written as it stands when
// it is already what json would write of it (appendPayload's test).
func (w *objectWriter) raw(n string, v jsontext.Value) {
	if v == nil {
		return
	}
	s := valueScanner{b: v, canonical: true}
	if s.value(0) != len(v) {
		w.ok = false
		return
	}
	w.name(n)
	w.b = append(w.b, v...)
}

// objects is the member n holding count objects, with omitempty; each(i)
// writes the members of the i-th. A closure per field rather than a
// generic function per element type: the encoders run once per start, and
// one instantiation per type cost the SDK-only binary 24 KB.
func (w *objectWriter) objects(n string, count int, each func(i int)) {
	if count > 0 {
		w.name(n)
		w.array(count, each)
	}
}

// array appends count objects as an array, none written as [].
func (w *objectWriter) array(count int, each func(i int)) {
	w.b = append(w.b, '[')
	for i := range count {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.open()
		each(i)
		w.close()
	}
	w.b = append(w.b, ']')
}
