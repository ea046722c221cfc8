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
// two never disagree; then run it with Main.
type Extension struct {
	// Manifest is derived from the registrations. Set what they cannot say
	// (a title, permissions) with New's options or on it directly, before
	// serving.
	Manifest *protocol.Manifest

	configure     ConfigureFunc
	validate      ValidateFunc
	migrate       MigrateFunc
	certification []byte

	operations map[string]*operation
	entries    map[string]*entryType
	tasks      map[string]TaskFunc
	checks     map[string]CheckFunc
	methods    map[string]MethodFunc
	// recurrences are the recurrence kinds' rules (Recurrence).
	recurrences map[string]RecurrenceFunc
	// routes are the route handlers' code (RouteHandler).
	routes map[string]*routeHandler
	// triggers are the Work kinds' trigger choices (Trigger).
	triggers map[string]TriggerFunc
	// executors are the executors' methods (Executor).
	executors map[string]*ExecutorFuncs
}

// Option sets what New cannot infer: a manifest field, or what the
// package's binary answers besides serving.
type Option func(*Extension)

// Version sets the package's own release.
func Version(v string) Option { return func(x *Extension) { x.Manifest.Version = v } }

// Summary sets the one-line summary.
func Summary(s string) Option { return func(x *Extension) { x.Manifest.Summary = s } }

// Title sets the display name operators read.
func Title(s string) Option { return func(x *Extension) { x.Manifest.Title = s } }

// Permissions asks for host services beyond the package's own surfaces.
func Permissions(p ...string) Option {
	return func(x *Extension) { x.Manifest.Permissions = append(x.Manifest.Permissions, p...) }
}

// KVVersion sets the KV layout version Migrate upgrades to.
func KVVersion(n int) Option { return func(x *Extension) { x.Manifest.KVVersion = n } }

// Command sets the command that runs the package (default <name>-extension).
func Command(argv ...string) Option { return func(x *Extension) { x.Manifest.Command = argv } }

// HostRun makes the package one the open-conduit binary serves itself
// (open-conduit extension-run NAME).
func HostRun() Option {
	return func(x *Extension) { x.Manifest.Command = protocol.HostRunCommand(x.Manifest.Name) }
}

// Certification sets the certification fixture the package's binary prints
// for package-certification (JSON; Run refuses anything else). Without it
// the binary prints {}.
func Certification(fixture []byte) Option {
	return func(x *Extension) { x.certification = append([]byte(nil), fixture...) }
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
	x := &Extension{Manifest: m}
	for _, o := range opts {
		o(x)
	}
	return x
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

// Operation registers a toolbelt operation served by h (made with Handler,
// Waiter for a wait operation, or Emit for an emit operation) and declares
// it, with its kind and the JSON Schema of h's input, in the manifest.
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
	if op.kind != "" {
		decl.Kind = op.kind
	}
	for _, o := range opts {
		o(&decl, &op)
	}
	if decl.Commit && decl.Kind != protocol.OperationEmit {
		panic(fmt.Sprintf("sdk: Operation %q: only an emit operation (sdk.Emit) may commit", name))
	}
	x.operations[name] = &op
	x.Manifest.Provides.Operations = append(x.Manifest.Provides.Operations, decl)
	return x
}

// TaskFunc is one pass of a background task. The Request names the task.
type TaskFunc func(ctx context.Context, r *Request) error

// Task registers a background pass the host runs every interval (at least
// a second) and declares it.
func (x *Extension) Task(name string, every time.Duration, fn TaskFunc) *Extension {
	if fn == nil {
		panic(fmt.Sprintf("sdk: Task %q: nil function", name))
	}
	if x.tasks == nil {
		x.tasks = make(map[string]TaskFunc)
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
// ok verdict; an error fails the check with its message as the detail. deep
// is true when the operator asked for the checks that use secrets.
type CheckFunc func(ctx context.Context, r *Request, deep bool) (detail string, err error)

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

// Schema declares a payload schema base with the versions this release
// reads; the last is the one it writes (<base>.v<N>).
func (x *Extension) Schema(base string, versions ...int) *Extension {
	x.Manifest.Provides.Schemas = append(x.Manifest.Provides.Schemas, protocol.Schema{Base: base, Versions: versions})
	return x
}

// MethodFunc serves a host-to-extension method with no registration of its
// own, with raw params; its result is sent as JSON.
type MethodFunc func(ctx context.Context, r *Request, params []byte) (any, error)

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

// ConfigureFunc receives each config generation: after initialize, and again
// on every config apply. It answers the ingress sources and webhook paths
// the extension registers.
type ConfigureFunc func(ctx context.Context, r *Request, p ConfigureParams) (ConfigureResult, error)

// ValidateFunc checks one config object of a declared type (an entry, a
// connection, a route on one of its handlers, the binding such a route
// binds: ValidateParams.Kind says which) before the daemon applies a
// configuration; a refusal is Errorf(ErrInvalid, …) saying what to change.
type ValidateFunc func(ctx context.Context, r *Request, p ValidateParams) (ValidateResult, error)

// MigrateFunc upgrades the extension's KV layout from version from to to.
type MigrateFunc func(ctx context.Context, r *Request, from, to int) error

// Configure registers the function that receives each config generation.
// Without one, a generation is accepted and nothing is registered.
// Registering twice panics.
func (x *Extension) Configure(fn ConfigureFunc) *Extension {
	once("Configure", x.configure != nil, fn == nil)
	x.configure = fn
	return x
}

// Validate registers the check of the config objects of the extension's
// declared types. It runs after the SDK's own strict decoding of a typed
// entry (EntryConfig), so it sees only configs that fit. Without one (and
// without typed entries) every object is accepted. Registering twice
// panics.
func (x *Extension) Validate(fn ValidateFunc) *Extension {
	once("Validate", x.validate != nil, fn == nil)
	x.validate = fn
	return x
}

// Migrate registers the upgrade of the extension's KV layout to the version
// KVVersion declares. It runs before Configure, with ordinary batches, when
// the stored layout is older, and must be idempotent: a crash mid-migration
// runs it again. Registering twice panics.
func (x *Extension) Migrate(fn MigrateFunc) *Extension {
	once("Migrate", x.migrate != nil, fn == nil)
	x.migrate = fn
	return x
}

// once panics on a second or a nil registration of a single function.
func once(what string, dup, isNil bool) {
	switch {
	case isNil:
		panic(fmt.Sprintf("sdk: %s: nil function", what))
	case dup:
		panic(fmt.Sprintf("sdk: %s: registered twice", what))
	}
}
