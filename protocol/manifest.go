package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ManifestFile is the name of a package's manifest, in the package directory.
const ManifestFile = "open-conduit-extension.json"

// HostRunCommand is the command of a package served by the open-conduit
// binary itself: ["open-conduit", "extension-run", NAME].
func HostRunCommand(name string) []string {
	return []string{"open-conduit", "extension-run", name}
}

// IsHostRun reports whether command is HostRunCommand(name).
func IsHostRun(command []string, name string) bool {
	return slices.Equal(command, HostRunCommand(name))
}

// Manifest is a package's declaration of what it provides: its name and
// release, the protocol versions it speaks, the command that runs it, and the
// mechanical surfaces it serves. It is parsed strictly (ParseManifest): a
// field this host does not know means the package needs a newer Open Conduit.
// The host enables exactly the methods these declarations name (Enabled).
type Manifest struct {
	// Name is the package's name, an identifier; every name it declares lives
	// under it.
	Name string `json:"name"`
	// Version is the package's own release, informational.
	Version string `json:"version,omitempty"`
	// Title is the one-line display name operators read (at most 64 chars).
	Title string `json:"title,omitempty"`
	// Summary is one line on what the package does.
	Summary string `json:"summary,omitempty"`
	// Protocol lists every protocol version the package speaks.
	Protocol []int `json:"protocol"`
	// Command runs the package, relative to its directory (or HostRunCommand).
	Command []string `json:"command"`
	// KVVersion versions the package's own KV layout; it never goes down.
	KVVersion int `json:"kv_version,omitzero"`
	// Permissions asks for host services beyond the package's own surfaces.
	Permissions []string `json:"permissions,omitempty"`
	// Playbooks is a directory of <name>.md playbooks inside the package.
	Playbooks string `json:"playbooks,omitempty"`
	// Provides is what the package serves.
	Provides Provides `json:"provides,omitzero"`
}

// Provides lists the mechanical surfaces a package serves. Each one enables
// the wire methods the catalogue ties to it, and nothing else.
type Provides struct {
	Connections      []ConnectionType `json:"connections,omitempty"`
	Extensions       []ExtensionType  `json:"extensions,omitempty"`
	Families         []Family         `json:"families,omitempty"`
	Webhooks         bool             `json:"webhooks,omitzero"`
	Routes           []Route          `json:"routes,omitempty"`
	WorkKinds        []WorkKind       `json:"work_kinds,omitempty"`
	Recurrences      []Recurrence     `json:"recurrences,omitempty"`
	Operations       []Operation      `json:"operations,omitempty"`
	Toolsets         []Toolset        `json:"toolsets,omitempty"`
	Targets          []string         `json:"targets,omitempty"`
	DependencyFilter bool             `json:"dependency_filter,omitzero"`
	EntryGated       bool             `json:"entry_gated,omitzero"`
	EntryNamed       bool             `json:"entry_named,omitzero"`
	OperationGate    bool             `json:"operation_gate,omitzero"`
	StartGate        bool             `json:"start_gate,omitzero"`
	Executors        []Executor       `json:"executors,omitempty"`
	Resources        []Resource       `json:"resources,omitempty"`
	Sandboxes        []ProviderType   `json:"sandboxes,omitempty"`
	Containers       []ContainerType  `json:"containers,omitempty"`
	Tunnels          []ProviderType   `json:"tunnels,omitempty"`
	Tasks            []Task           `json:"tasks,omitempty"`
	Checks           []Check          `json:"checks,omitempty"`
	ExternalStores   []ExternalStore  `json:"external_stores,omitempty"`
	Schemas          []Schema         `json:"schemas,omitempty"`
	Exporters        bool             `json:"exporters,omitzero"`
	Render           bool             `json:"render,omitzero"`
	Annotate         bool             `json:"annotate,omitzero"`
	Actions          bool             `json:"actions,omitzero"`
	Panels           bool             `json:"panels,omitzero"`
	RunEnvironment   bool             `json:"run_environment,omitzero"`
	SegmentEnd       bool             `json:"segment_end,omitzero"`
	ConfigCandidate  bool             `json:"config_candidate,omitzero"`
	Setup            []Setup          `json:"setup,omitempty"`
	Probes           []Probe          `json:"probes,omitempty"`
	Pages            []Page           `json:"pages,omitempty"`
}

// Field describes one config field of a declared type for the operator.
type Field struct {
	Name     string   `json:"name"`
	Help     string   `json:"help,omitempty"`
	Default  string   `json:"default,omitempty"`
	Required bool     `json:"required,omitzero"`
	Options  []string `json:"options,omitempty"`
	// Secret marks a key of a connection's secret_refs (connections only).
	Secret bool `json:"secret,omitzero"`
}

// Setting is a top-level config field that is safe to show the operator.
type Setting struct {
	Field string `json:"field"`
	// Type is string, boolean, number or strings.
	Type    string         `json:"type"`
	Default jsontext.Value `json:"default,omitzero"`
}

// Describe names what an entry sets up: one line per element of List.
type Describe struct {
	List   string `json:"list"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

// ConnectionType is a kind of named credentials the package understands.
type ConnectionType struct {
	Type   string  `json:"type"`
	Fields []Field `json:"fields,omitempty"`
}

// ExtensionType is a type of scope entry; an ingress type registers sources
// that produce Events of the listed families.
type ExtensionType struct {
	Type     string    `json:"type"`
	Ingress  bool      `json:"ingress,omitzero"`
	Families []string  `json:"families,omitempty"`
	Settings []Setting `json:"settings,omitempty"`
	Describe *Describe `json:"describe,omitempty"`
	Fields   []Field   `json:"fields,omitempty"`
}

// Family is an Event family the package owns. A family that reconcile cannot
// re-derive states what is lost when a delivery is missed.
type Family struct {
	Name        string `json:"name"`
	Rederivable bool   `json:"rederivable,omitzero"`
	Loss        string `json:"loss,omitempty"`
}

// Route is a route handler.
type Route struct {
	Handler string `json:"handler"`
	// Samples marks a handler that answers route.samples.
	Samples bool `json:"samples,omitzero"`
	// Binding marks a handler that checks the binding its routes bind.
	Binding bool    `json:"binding,omitzero"`
	Fields  []Field `json:"fields,omitempty"`
}

// WorkKind is a kind of Work the package's routes create, with its policy.
type WorkKind struct {
	Kind     string `json:"kind"`
	Standing bool   `json:"standing,omitzero"`
	// Trigger marks a kind whose trigger input is chosen by work_kind.trigger.
	Trigger bool `json:"trigger,omitzero"`
	Timed   bool `json:"timed,omitzero"`
	RunOnce bool `json:"run_once,omitzero"`
}

// Recurrence is a calendar rule kind answered by recurrence.next.
type Recurrence struct {
	Kind string `json:"kind"`
}

// Operation kinds.
const (
	OperationHandler = "handler"
	OperationWait    = "wait"
	OperationEmit    = "emit"
)

// Operation is a toolbelt operation.
type Operation struct {
	Name string `json:"name"`
	// Kind is handler, wait or emit.
	Kind     string `json:"kind"`
	Summary  string `json:"summary,omitempty"`
	Guidance string `json:"guidance,omitempty"`
	// Input is the JSON Schema of the input's data; it must be an object schema.
	Input jsontext.Value `json:"input,omitzero"`
	// Commit marks an emit whose records commit with the Event (emit.commit).
	Commit bool `json:"commit,omitzero"`
	// Serves names the capability a handler serves.
	Serves string `json:"serves,omitempty"`
}

// Toolset is a named set of the package's operations for an agent role.
type Toolset struct {
	Name       string             `json:"name"`
	Operations []ToolsetOperation `json:"operations"`
}

// ToolsetOperation is one operation of a toolset, with the toolset version it
// joined in.
type ToolsetOperation struct {
	Name  string `json:"name"`
	Since int    `json:"since,omitzero"`
}

// Executor controls, each a method the host may call.
const (
	ControlStop              = "stop"
	ControlForget            = "forget"
	ControlAttach            = "attach"
	ControlContainerAttach   = "container_attach"
	ControlLive              = "live"
	ControlInteractiveLaunch = "interactive_launch"
)

// Executor is an executor the package runs Work with.
type Executor struct {
	Name         string       `json:"name"`
	Capabilities Capabilities `json:"capabilities,omitzero"`
	// Controls are optional methods: stop, forget, attach, container_attach,
	// live, interactive_launch.
	Controls []string `json:"controls,omitempty"`
	// Pool is "" (agent turns) or "jobs".
	Pool        string   `json:"pool,omitempty"`
	LaunchNames []string `json:"launch_names,omitempty"`
	// ResourceMode, Playbook and FolderConfig mark validate kinds the
	// executor answers (executor_mode, executor_playbook, executor_folder).
	ResourceMode bool    `json:"resource_mode,omitzero"`
	Playbook     bool    `json:"playbook,omitzero"`
	FolderConfig bool    `json:"folder_config,omitzero"`
	Fields       []Field `json:"fields,omitempty"`
}

// Capabilities are the core's mechanical executor labels. There is no field
// for a semantic label, so one cannot be expressed.
type Capabilities struct {
	Interrupt bool `json:"interrupt,omitzero"`
	Inject    bool `json:"inject,omitzero"`
	Resume    bool `json:"resume,omitzero"`
	Workspace bool `json:"workspace,omitzero"`
	// Toolbelt lists none, cli, mcp or sdk.
	Toolbelt  []string `json:"toolbelt,omitempty"`
	Sandbox   bool     `json:"sandbox,omitzero"`
	Container bool     `json:"container,omitzero"`
}

// Resource is a resource (workspace) provider type.
type Resource struct {
	Type string `json:"type"`
	// Modes are distinct values of shared, work and fresh.
	Modes       []string  `json:"modes,omitempty"`
	ModeDefault bool      `json:"mode_default,omitzero"`
	Sandbox     bool      `json:"sandbox,omitzero"`
	Sweep       bool      `json:"sweep,omitzero"`
	Settings    []Setting `json:"settings,omitempty"`
	Fields      []Field   `json:"fields,omitempty"`
}

// ProviderType is a sandbox or tunnel provider type.
type ProviderType struct {
	Type   string  `json:"type"`
	Fields []Field `json:"fields,omitempty"`
}

// ContainerType is a container provider type.
type ContainerType struct {
	Type    string  `json:"type"`
	Forward bool    `json:"forward,omitzero"`
	Fields  []Field `json:"fields,omitempty"`
}

// Task is a background pass run every IntervalSeconds (at least 1).
type Task struct {
	Name            string `json:"name"`
	IntervalSeconds int    `json:"interval_seconds"`
}

// Check is a doctor check.
type Check struct {
	Name    string `json:"name"`
	Deep    bool   `json:"deep,omitzero"`
	Offline bool   `json:"offline,omitzero"`
}

// ExternalStore is a store larger than coordination state, reached through a
// declared connection type.
type ExternalStore struct {
	Name       string `json:"name"`
	Connection string `json:"connection"`
}

// Schema declares a payload schema base with the versions this release
// reads, strictly increasing; the last is the one it writes.
type Schema struct {
	Base     string `json:"base"`
	Versions []int  `json:"versions"`
}

// Setup is a setup flow the package offers for one of its types.
type Setup struct {
	Type     string `json:"type"`
	FirstRun bool   `json:"first_run,omitzero"`
}

// Probe is a read-only setup probe the package offers (probe.serve).
type Probe struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// Page is a page of the package's own in the web view.
type Page struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Summary  string   `json:"summary,omitempty"`
	Entry    string   `json:"entry"`
	WorkKind string   `json:"work_kind"`
	Start    string   `json:"start"`
	Compose  []string `json:"compose,omitempty"`
	Route    string   `json:"route,omitempty"`
}

// jsonOpts are the options every protocol document is read with: exact,
// case-sensitive names and no unknown members.
var jsonOpts = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// ParseManifest reads a manifest strictly. A member this host does not know
// is ErrNeedsNewerHost (the package was built for a newer Open Conduit); any
// other decoding failure is ErrInvalid. It does not Validate.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m, jsonOpts); err != nil {
		return nil, manifestDecodeError(err)
	}
	return &m, nil
}

// manifestDecodeError classifies a decoding error: unknown members mean a
// newer host is needed, everything else is an invalid manifest. The message
// names the JSON path.
func manifestDecodeError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		path := string(se.JSONPointer)
		if path == "" {
			path = "/"
		}
		if errors.Is(se.Err, json.ErrUnknownName) {
			return Errorf(ErrNeedsNewerHost,
				"manifest field %s is not known to this Open Conduit: correct it if it is a typo, otherwise upgrade Open Conduit or install a release of the package built for this one", path)
		}
		return Errorf(ErrInvalid, "manifest %s: %v", path, se.Err)
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return Errorf(ErrInvalid, "manifest is not valid JSON at %s: %v", syn.JSONPointer, syn.Err)
	}
	return Errorf(ErrInvalid, "manifest: %v", err)
}

// Marshal encodes the manifest as compact, deterministic JSON.
func (m *Manifest) Marshal() ([]byte, error) {
	// AppendJSON writes json.Marshal's bytes; a manifest has no map for
	// json.Deterministic to order.
	return m.AppendJSON(nil)
}

// MarshalIndent encodes the manifest for a file a person reads.
func (m *Manifest) MarshalIndent() ([]byte, error) {
	b, err := json.Marshal(m, json.Deterministic(true), jsontext.WithIndent("  "))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Canonical is the manifest's canonical form: deterministic JSON with every
// raw value (schemas, defaults) canonicalized, so two manifests that mean the
// same compare equal whatever their formatting or key order. Two manifests
// are SemanticallyEqual exactly when both forms exist and are the same bytes,
// so a caller comparing one manifest with many can keep its form.
func (m *Manifest) Canonical() ([]byte, error) {
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	return v, nil
}

// SemanticallyEqual reports whether two manifests declare the same thing: the
// comparison initialize makes between the file and what the process returns.
// Formatting, member order and omitted-versus-empty values do not matter.
func (m *Manifest) SemanticallyEqual(o *Manifest) bool {
	a, err1 := m.Canonical()
	b, err2 := o.Canonical()
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// Diff names the first top-level field where two manifests differ, for the
// manifest_mismatch message. It returns "" when they are semantically equal.
func (m *Manifest) Diff(o *Manifest) string {
	if m.SemanticallyEqual(o) {
		return ""
	}
	var a, b map[string]jsontext.Value
	ab, _ := m.Canonical()
	bb, _ := o.Canonical()
	_ = json.Unmarshal(ab, &a)
	_ = json.Unmarshal(bb, &b)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !bytes.Equal(a[k], b[k]) {
			return k
		}
	}
	return "(unknown)"
}

// HasPermission reports whether the manifest asks for permission p.
func (m *Manifest) HasPermission(p string) bool { return slices.Contains(m.Permissions, p) }

// Operation returns the declared operation named name.
func (m *Manifest) Operation(name string) (Operation, bool) {
	for _, op := range m.Provides.Operations {
		if op.Name == name {
			return op, true
		}
	}
	return Operation{}, false
}

// Family reports whether the manifest declares family name.
func (m *Manifest) Family(name string) bool {
	for _, f := range m.Provides.Families {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Namespace reports whether ns is one of the extension's KV namespaces: its
// name, or its name followed by "." and a suffix.
func Namespace(extension, ns string) bool {
	return ns == extension || strings.HasPrefix(ns, extension+".") && len(ns) > len(extension)+1
}

// SourceNamespace reports whether source is one of the extension's ingress
// source names: its name, or its name followed by "/" and a suffix.
func SourceNamespace(extension, source string) bool {
	return source == extension || strings.HasPrefix(source, extension+"/") && len(source) > len(extension)+1
}

func (m *Manifest) String() string {
	return fmt.Sprintf("%s %s", m.Name, m.Version)
}
