package protocol

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Limits of the wire, shared by both sides.
const (
	// MaxMessageBytes caps one JSON-RPC message (one line). A longer line is a
	// protocol error that closes the connection.
	MaxMessageBytes = 16 << 20
	// MaxChunkBytes caps one artifact chunk. Each is acknowledged: the
	// chunks of one artifact an extension has sent and not yet seen
	// answered are at most the host's InitializeParams.ArtifactWindow (one
	// when the host names none), which is the stream's backpressure.
	MaxChunkBytes = 256 << 10
	// ArtifactWindow is the window this tree's hosts announce: the next
	// chunk may go out while one is being answered, so the extension
	// encodes and sends while the host decodes and stores.
	ArtifactWindow = 2
	// ArtifactAheadWaitMillis bounds how long a host holds a chunk that
	// arrived ahead of the bytes written for the chunks before it.
	ArtifactAheadWaitMillis = 5000
	// MaxInflight caps the requests one side serves at once; the next is
	// answered overloaded at once, without pausing the reader.
	MaxInflight = 64
	// InTransactionDeadlineMillis bounds an in-transaction call.
	InTransactionDeadlineMillis = 250
)

// Payload is an Event or operation payload: a schema identifier
// (<base>.v<N>, or empty) and its data as raw JSON.
type Payload struct {
	Schema string         `json:"schema,omitempty"`
	Data   jsontext.Value `json:"data,omitzero"`
}

// HostInfo names the host in initialize.
type HostInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams is what the host sends first.
type InitializeParams struct {
	// ProtocolVersions are the versions the host speaks.
	ProtocolVersions []int    `json:"protocol_versions"`
	Host             HostInfo `json:"host"`
	// StateDir is the extension's private state directory.
	StateDir string `json:"state_dir,omitempty"`
	// ConfigDir is the config file's directory, for relative paths.
	ConfigDir string `json:"config_dir,omitempty"`
	// ExecutorDirs maps each declared executor to its runs directory.
	ExecutorDirs map[string]string `json:"executor_dirs,omitempty"`
	// ResourceDirs maps each declared resource type to its state directory.
	ResourceDirs map[string]string `json:"resource_dirs,omitempty"`
	// ContainerDirs maps each declared container type to its state directory.
	ContainerDirs map[string]string `json:"container_dirs,omitempty"`
	// ContainerHost is the host's container label.
	ContainerHost string `json:"container_host,omitempty"`
	// ArtifactWindow is how many chunks of one artifact the extension may
	// have sent and not yet seen answered; 0 means 1. A host that announces
	// more applies each artifact's chunks in offset order, holding one that
	// arrives ahead of the bytes before it (ArtifactAheadWaitMillis).
	ArtifactWindow int `json:"artifact_window,omitempty"`
}

// InitializeResult is the extension's answer: the version it picked and its
// manifest, which must equal the file semantically.
type InitializeResult struct {
	ProtocolVersion int      `json:"protocol_version"`
	Manifest        Manifest `json:"manifest"`
}

// Generation identifies the config generation a configure carries.
type Generation struct {
	ID   int64  `json:"id"`
	Hash string `json:"hash,omitempty"`
}

// Entry is one configured instance of one of the extension's types in a scope.
type Entry struct {
	Scope string `json:"scope"`
	Type  string `json:"type"`
	Name  string `json:"name"`
	// Config is the entry's config object as written.
	Config jsontext.Value `json:"config,omitzero"`
	// Connection is the connection the entry names, when of a declared type.
	Connection string `json:"connection,omitempty"`
	// BindingConnections are the connections the scope's bindings name that
	// are of the extension's declared connection types.
	BindingConnections []string `json:"binding_connections,omitempty"`
}

// Connection is a connection the extension may use: config only, with the
// names of its secrets (never their values or references).
type Connection struct {
	Name    string         `json:"name"`
	Type    string         `json:"type"`
	Config  jsontext.Value `json:"config,omitzero"`
	Secrets []string       `json:"secrets,omitempty"`
}

// KVLayout is the stored and declared KV layout versions; stored < declared
// asks the extension to migrate before it configures.
type KVLayout struct {
	Stored   int `json:"stored"`
	Declared int `json:"declared"`
}

// ConfigureParams carries the current config generation. It is sent after
// initialize and again on every config apply, without a restart.
type ConfigureParams struct {
	Generation  Generation   `json:"generation"`
	Entries     []Entry      `json:"entries,omitempty"`
	Connections []Connection `json:"connections,omitempty"`
	// Disabled are the extension's entries in disabled scopes: start nothing
	// new for them, keep what they hold.
	Disabled  []Entry  `json:"disabled,omitempty"`
	PublicURL string   `json:"public_url,omitempty"`
	DryRun    bool     `json:"dry_run,omitzero"`
	KV        KVLayout `json:"kv"`
}

// Source is an ingress source the extension registers.
type Source struct {
	Name     string   `json:"name"`
	Families []string `json:"families,omitempty"`
	// Reconcile marks a source the package scans (ingress.reconcile): the
	// host scans it on its schedule and when an operator asks. A source
	// without it is push-only, and never scanned.
	Reconcile bool `json:"reconcile,omitzero"`
}

// ConfigureResult names the sources and webhook paths the extension
// registers; each must stay in its namespace.
type ConfigureResult struct {
	Sources      []Source `json:"sources,omitempty"`
	WebhookPaths []string `json:"webhook_paths,omitempty"`
}

// ShutdownParams has no fields; it is an object for forward compatibility.
type ShutdownParams struct{}

// ShutdownResult has no fields.
type ShutdownResult struct{}

// CancelParams is the $/cancel notification's params: the id of the request
// to cancel, as the sender sent it.
type CancelParams struct {
	ID jsontext.Value `json:"id"`
}

// KVGetParams reads one key.
type KVGetParams struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

// KVGetResult is the value and its version; Found false means absent.
type KVGetResult struct {
	Found   bool   `json:"found"`
	Value   []byte `json:"value,omitempty"`
	Version string `json:"version,omitempty"`
}

// KVListParams lists keys of one namespace in key order, starting after
// After, at most Limit (default and maximum 1000).
type KVListParams struct {
	Namespace string `json:"namespace"`
	Prefix    string `json:"prefix,omitempty"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitzero"`
}

// KVItem is one listed key.
type KVItem struct {
	Key     string `json:"key"`
	Value   []byte `json:"value"`
	Version string `json:"version"`
}

// KVListResult is one page; More says another page follows after the last
// key.
type KVListResult struct {
	Items []KVItem `json:"items"`
	More  bool     `json:"more,omitzero"`
}

// KVMaxList is the largest kv.list page.
const KVMaxList = 1000

// KVCheck is a precondition: the key's version is Version, or the key is
// absent when Absent is set.
type KVCheck struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Version   string `json:"version,omitempty"`
	Absent    bool   `json:"absent,omitzero"`
}

// KVPut writes one key.
type KVPut struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     []byte `json:"value"`
}

// KVDelete removes one key.
type KVDelete struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

// Emission is an Event a kv.commit batch asks the host to accept in the same
// atomic unit: a root Event of the scope when Parent is empty, otherwise one
// derived from Parent.
type Emission struct {
	Scope      string  `json:"scope"`
	Source     string  `json:"source"`
	DeliveryID string  `json:"delivery_id"`
	Type       string  `json:"type"`
	Parent     string  `json:"parent,omitempty"`
	Payload    Payload `json:"payload"`
}

// KVCommitParams is one atomic batch: every check holds, then every put,
// delete and emission applies, or nothing does.
type KVCommitParams struct {
	Checks    []KVCheck  `json:"checks,omitempty"`
	Puts      []KVPut    `json:"puts,omitempty"`
	Deletes   []KVDelete `json:"deletes,omitempty"`
	Emissions []Emission `json:"emissions,omitempty"`
}

// EmissionResult answers one Emission: the accepted Event's ID and whether
// it was new, or the code it was refused with alone (causal_limit).
type EmissionResult struct {
	EventID string `json:"event_id,omitempty"`
	Added   bool   `json:"added,omitzero"`
	Refused string `json:"refused,omitempty"`
}

// KVCommitResult answers a committed batch: each put's new version, in
// order, and each emission's outcome.
type KVCommitResult struct {
	Versions  []string         `json:"versions,omitempty"`
	Emissions []EmissionResult `json:"emissions,omitempty"`
}

// Authority is what an operation call carries instead of a token. The host
// builds it; the extension never supplies it.
type Authority struct {
	Scope      string `json:"scope_id,omitempty"`
	Work       string `json:"work_id,omitempty"`
	Execution  string `json:"execution_id,omitempty"`
	Connection string `json:"connection,omitempty"`
	Caller     string `json:"caller,omitempty"`
}

// OperationCallParams calls a handler operation.
type OperationCallParams struct {
	Operation string    `json:"operation"`
	Input     Payload   `json:"input"`
	Authority Authority `json:"authority"`
	// RequestID is the call's idempotency key: a retry carries the same one.
	RequestID string `json:"request_id,omitempty"`
}

// OperationCallResult is the handler's output.
type OperationCallResult struct {
	Output Payload `json:"output"`
}

// TaskRunParams runs one pass of a declared task.
type TaskRunParams struct {
	Task string `json:"task"`
}

// TaskRunResult has no fields.
type TaskRunResult struct{}

// CheckRunParams runs one declared doctor check.
type CheckRunParams struct {
	Check string `json:"check"`
	Deep  bool   `json:"deep,omitzero"`
	// Config is the extension's read-only view of the live configuration,
	// so a check can judge how the configuration uses it.
	Config *CheckConfig `json:"config,omitempty"`
}

// CheckConfig is what a doctor check sees of the live configuration: the
// config file's directory (for relative paths), each enabled scope that
// uses the extension (its own entries with their config, the scope's routes
// and bindings), and the connections of its own types its entries there
// name, config only. It never carries a secret's value, name or reference.
type CheckConfig struct {
	Dir         string       `json:"dir,omitempty"`
	Scopes      []ScopeView  `json:"scopes,omitempty"`
	Connections []Connection `json:"connections,omitempty"`
}

// Check statuses.
const (
	CheckOK   = "ok"
	CheckInfo = "info"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// CheckRunResult is a check's verdict: the short form {ok, detail} or the
// full form with a status.
type CheckRunResult struct {
	OK     bool     `json:"ok,omitzero"`
	Status string   `json:"status,omitempty"`
	Code   string   `json:"code,omitempty"`
	Detail string   `json:"detail,omitempty"`
	Items  []string `json:"items,omitempty"`
}

// IngressDeliverParams delivers one input from the extension's own receiver.
// The host hands it back to the extension's ingress.push as a Delivery
// whose payload data is Body, which must be JSON.
type IngressDeliverParams struct {
	Source      string `json:"source"`
	DeliveryID  string `json:"delivery_id"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body"`
}

// IngressDeliverResult is answered after durable acceptance: each drafted
// Event's ID and whether it was new. Duplicate says none was (the delivery
// was accepted before).
type IngressDeliverResult struct {
	Accepted  bool             `json:"accepted"`
	Duplicate bool             `json:"duplicate,omitzero"`
	Events    []EmissionResult `json:"events,omitempty"`
}

// ArtifactCreateParams opens an artifact writer.
type ArtifactCreateParams struct {
	Execution string `json:"execution_id,omitempty"`
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
}

// ArtifactCreateResult names the writer.
type ArtifactCreateResult struct {
	Artifact string `json:"artifact_id"`
}

// ArtifactWriteParams writes one chunk at Offset (the bytes written so far).
type ArtifactWriteParams struct {
	Artifact string `json:"artifact_id"`
	Offset   int64  `json:"offset"`
	Data     []byte `json:"data"`
}

// ArtifactWriteResult acknowledges a chunk with the artifact's new size.
type ArtifactWriteResult struct {
	Size int64 `json:"size"`
}

// ArtifactCommitParams commits an artifact. Digest and CRC32, each when
// set, are the writer's checksum of every byte and must match
// (CheckArtifactCommit): Digest the SHA-256 in lower-case hex, CRC32 the
// CRC-32 (IEEE, as zlib's crc32) as FormatCRC32 writes it.
type ArtifactCommitParams struct {
	Artifact string `json:"artifact_id"`
	Digest   string `json:"digest,omitempty"`
	CRC32    string `json:"crc32,omitempty"`
}

// ArtifactCommitResult is the committed artifact.
type ArtifactCommitResult struct {
	Artifact string `json:"artifact_id"`
	Size     int64  `json:"size"`
	Digest   string `json:"digest"`
}

// ArtifactAbortParams abandons a writer.
type ArtifactAbortParams struct {
	Artifact string `json:"artifact_id"`
}

// Validation kinds: what a validate call checks.
const (
	ValidateConnection = "connection"
	ValidateExtension  = "extension"
	ValidateRoute      = "route"
	ValidateExecutor   = "executor"
	ValidateResource   = "resource"
	ValidateBinding    = "binding"
)

// ValidateParams asks a package to check one config object of one of its
// declared types. It carries no secret values and no reference text.
type ValidateParams struct {
	Kind   string         `json:"kind"`
	Type   string         `json:"type"`
	Config jsontext.Value `json:"config,omitzero"`
	// Scope is the scope the object is in ("" for a connection).
	Scope string `json:"scope_id,omitempty"`
	// Name is the object's name (an entry's, a connection's).
	Name string `json:"name,omitempty"`
}

// ValidateResult accepts the object; a refusal is an error (invalid, with
// a message that says what to change). Warnings are fixed sentences about a
// valid config that should change.
type ValidateResult struct {
	Warnings []string `json:"warnings,omitempty"`
}
