package sdk

import (
	"context"
	"fmt"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// Extension is an extension's definition: its manifest and the code that
// serves each surface. Build one with New and its registrations, which
// declare each surface in the manifest as they register its code, so the
// two never disagree; then Serve it.
type Extension struct {
	// Manifest is derived from the registrations. Set what they cannot say
	// (a title, permissions) with New's options or on it directly, before
	// Serve.
	Manifest *protocol.Manifest

	// Configure receives each config generation: after initialize, and again
	// on every config apply. It answers the ingress sources and webhook paths
	// the extension registers. Nil answers none.
	Configure func(ctx context.Context, h *Host, p protocol.ConfigureParams) (protocol.ConfigureResult, error)
	// Validate checks one config object of a declared type (an entry, a
	// connection …) before the daemon applies a configuration; return
	// protocol.Errorf(protocol.ErrInvalid, …) saying what to change. Nil
	// accepts every object.
	Validate func(ctx context.Context, p protocol.ValidateParams) (protocol.ValidateResult, error)
	// Migrate upgrades the extension's KV layout from version from to to,
	// before Configure, with ordinary kv.commit batches. It must be
	// idempotent: a crash mid-migration runs it again.
	Migrate func(ctx context.Context, h *Host, from, to int) error

	operations map[string]*operation
	tasks      map[string]func(context.Context, *Host) error
	checks     map[string]CheckFunc
	methods    map[string]MethodFunc
}

// Option sets a manifest field New cannot infer.
type Option func(*protocol.Manifest)

// Version sets the package's own release.
func Version(v string) Option { return func(m *protocol.Manifest) { m.Version = v } }

// Summary sets the one-line summary.
func Summary(s string) Option { return func(m *protocol.Manifest) { m.Summary = s } }

// Title sets the display name operators read.
func Title(s string) Option { return func(m *protocol.Manifest) { m.Title = s } }

// Permissions asks for host services beyond the package's own surfaces.
func Permissions(p ...string) Option {
	return func(m *protocol.Manifest) { m.Permissions = append(m.Permissions, p...) }
}

// KVVersion sets the KV layout version Migrate upgrades to.
func KVVersion(n int) Option { return func(m *protocol.Manifest) { m.KVVersion = n } }

// Command sets the command that runs the package (default <name>-extension).
func Command(argv ...string) Option { return func(m *protocol.Manifest) { m.Command = argv } }

// HostRun makes the package one the open-conduit binary serves itself
// (open-conduit extension-run NAME).
func HostRun() Option {
	return func(m *protocol.Manifest) { m.Command = protocol.HostRunCommand(m.Name) }
}

// New starts an extension named name, speaking the protocol versions this
// SDK speaks, run by the command <name>-extension unless Command says
// otherwise.
func New(name string, opts ...Option) *Extension {
	m := &protocol.Manifest{
		Name:     name,
		Protocol: append([]int(nil), protocol.Versions...),
		Command:  []string{name + "-extension"},
	}
	for _, o := range opts {
		o(m)
	}
	return &Extension{Manifest: m}
}

// OperationOption sets an operation's declaration.
type OperationOption func(*protocol.Operation, *operation)

// Describe sets the operation's one-line summary.
func Describe(summary string) OperationOption {
	return func(d *protocol.Operation, _ *operation) { d.Summary = summary }
}

// Guidance sets the operation's agent guidance.
func Guidance(text string) OperationOption {
	return func(d *protocol.Operation, _ *operation) { d.Guidance = text }
}

// Serves names the capability a handler operation serves.
func Serves(capability string) OperationOption {
	return func(d *protocol.Operation, _ *operation) { d.Serves = capability }
}

// OutputSchema names the schema the output is sent under (default
// <operation>.v1).
func OutputSchema(schema string) OperationOption {
	return func(_ *protocol.Operation, o *operation) { o.outputSchema = schema }
}

// Operation registers a toolbelt operation served by h (made with Handler)
// and declares it, with the JSON Schema of h's input, in the manifest.
// Registering a name twice panics.
func (x *Extension) Operation(name string, h OperationHandler, opts ...OperationOption) *Extension {
	if h.op == nil {
		panic(fmt.Sprintf("sdk: Operation %q: make the handler with sdk.Handler", name))
	}
	if x.operations == nil {
		x.operations = make(map[string]*operation)
	}
	if _, dup := x.operations[name]; dup {
		panic(fmt.Sprintf("sdk: Operation %q: registered twice", name))
	}
	op := *h.op
	op.outputSchema = name + ".v1"
	decl := protocol.Operation{Name: name, Kind: protocol.OperationHandler, Input: op.inputSchemaJSON}
	for _, o := range opts {
		o(&decl, &op)
	}
	x.operations[name] = &op
	x.Manifest.Provides.Operations = append(x.Manifest.Provides.Operations, decl)
	return x
}

// Task registers a background pass the host runs every interval (at least
// a second) and declares it.
func (x *Extension) Task(name string, every time.Duration, fn func(ctx context.Context, h *Host) error) *Extension {
	if fn == nil {
		panic(fmt.Sprintf("sdk: Task %q: nil function", name))
	}
	if x.tasks == nil {
		x.tasks = make(map[string]func(context.Context, *Host) error)
	}
	if _, dup := x.tasks[name]; dup {
		panic(fmt.Sprintf("sdk: Task %q: registered twice", name))
	}
	x.tasks[name] = fn
	x.Manifest.Provides.Tasks = append(x.Manifest.Provides.Tasks,
		protocol.Task{Name: name, IntervalSeconds: int(every / time.Second)})
	return x
}

// CheckFunc is a doctor check: the detail line it returns is shown with an
// ok verdict; an error fails the check with its message as the detail.
type CheckFunc func(ctx context.Context, h *Host, deep bool) (detail string, err error)

// CheckOption sets a check's declaration.
type CheckOption func(*protocol.Check)

// Deep marks a check that runs only with --check-secrets.
func Deep() CheckOption { return func(c *protocol.Check) { c.Deep = true } }

// Offline marks a check offline doctor runs.
func Offline() CheckOption { return func(c *protocol.Check) { c.Offline = true } }

// Check registers a doctor check and declares it.
func (x *Extension) Check(name string, fn CheckFunc, opts ...CheckOption) *Extension {
	if fn == nil {
		panic(fmt.Sprintf("sdk: Check %q: nil function", name))
	}
	if x.checks == nil {
		x.checks = make(map[string]CheckFunc)
	}
	if _, dup := x.checks[name]; dup {
		panic(fmt.Sprintf("sdk: Check %q: registered twice", name))
	}
	x.checks[name] = fn
	decl := protocol.Check{Name: name}
	for _, o := range opts {
		o(&decl)
	}
	x.Manifest.Provides.Checks = append(x.Manifest.Provides.Checks, decl)
	return x
}

// FamilyOption sets a family's declaration.
type FamilyOption func(*protocol.Family)

// Rederivable marks a family reconcile can re-derive, so nothing is lost
// when a delivery is missed.
func Rederivable() FamilyOption { return func(f *protocol.Family) { f.Rederivable = true } }

// Loss states what is lost when a delivery of a non-re-derivable family is
// missed.
func Loss(text string) FamilyOption { return func(f *protocol.Family) { f.Loss = text } }

// Family declares an Event family the extension owns.
func (x *Extension) Family(name string, opts ...FamilyOption) *Extension {
	f := protocol.Family{Name: name}
	for _, o := range opts {
		o(&f)
	}
	x.Manifest.Provides.Families = append(x.Manifest.Provides.Families, f)
	return x
}

// IngressType declares an entry type whose sources produce Events of the
// given (declared) families. The extension registers the sources in
// Configure and delivers from its own receivers with Host.Deliver.
func (x *Extension) IngressType(typ string, families ...string) *Extension {
	x.Manifest.Provides.Extensions = append(x.Manifest.Provides.Extensions,
		protocol.ExtensionType{Type: typ, Ingress: true, Families: families})
	return x
}

// EntryType declares an entry type operators configure in scopes, with the
// top-level config fields that are safe to show them. Configure receives
// each generation's entries of it.
func (x *Extension) EntryType(typ string, settings ...protocol.Setting) *Extension {
	x.Manifest.Provides.Extensions = append(x.Manifest.Provides.Extensions,
		protocol.ExtensionType{Type: typ, Settings: settings})
	return x
}

// Schema declares a payload schema base with the versions this release
// reads; the last is the one it writes (<base>.v<N>).
func (x *Extension) Schema(base string, versions ...int) *Extension {
	x.Manifest.Provides.Schemas = append(x.Manifest.Provides.Schemas, protocol.Schema{Base: base, Versions: versions})
	return x
}

// MethodFunc serves a host-to-extension method with no registration of its
// own, with raw params.
type MethodFunc func(ctx context.Context, h *Host, params []byte) (any, error)

// Method serves a catalogued host-to-extension method that has no
// registration method yet. Declare its surface on Manifest.Provides; the
// host never calls a method the manifest does not enable.
func (x *Extension) Method(name string, fn MethodFunc) *Extension {
	if x.methods == nil {
		x.methods = make(map[string]MethodFunc)
	}
	if _, dup := x.methods[name]; dup {
		panic(fmt.Sprintf("sdk: Method %q: registered twice", name))
	}
	x.methods[name] = fn
	return x
}
