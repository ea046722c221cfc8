// Package library is the wire of the "library" transport: the workload
// spoken with go.lsp.dev/jsonrpc2 alone, one JSON-RPC 2.0 object per line
// over the child's stdin and stdout, with none of Open Conduit's layers
// (no handshake, no operation.call envelope, no worker pool, no guard under
// the framer). The extension (cmd/library-ext) and the host
// (cmd/transportbench) share these names and shapes so the two sides cannot
// drift. The method names and field names follow our protocol where it has
// one, so a frame costs about what ours costs to carry.
package library

// Methods the host calls on the extension.
const (
	// MethodInitialize checks the host's protocol versions; the library has
	// no handshake, so this one call stands in for ours when the version
	// refusal is timed, and is never sent otherwise.
	MethodInitialize = "initialize"
	// MethodEcho answers its workload.Echo.
	MethodEcho = "bench.echo"
	// MethodCallbacks calls the host back workload.Callbacks.N times.
	MethodCallbacks = "bench.callbacks"
	// MethodUpload writes an artifact in acknowledged chunks.
	MethodUpload = "bench.upload"
	// MethodWait waits until cancelled and records when it saw the cancel.
	MethodWait = "bench.wait"
	// MethodCrash writes the clock to a file and exits at once.
	MethodCrash = "bench.crash"
)

// Methods the extension calls on the host.
const (
	// MethodKVGet is the callback the callback figure times.
	MethodKVGet = "kv.get"
	// MethodArtifactCreate opens an artifact.
	MethodArtifactCreate = "artifact.create"
	// MethodArtifactWrite is one acknowledged chunk.
	MethodArtifactWrite = "artifact.write"
	// MethodArtifactCommit ends an artifact.
	MethodArtifactCommit = "artifact.commit"
	// MethodRecord tells the host a clock reading under a key (the cancel
	// figure's "started" and "seen").
	MethodRecord = "bench.record"
)

// MethodCancel is the cancel notification: "$/cancelRequest", the name
// go.lsp.dev/jsonrpc2's own documentation and LSP use. The library's Conn
// does not send it when a call's context ends, so the host sends it itself.
const MethodCancel = "$/cancelRequest"

// Version is the one protocol version the extension speaks.
const Version = 1

// Initialize lists the versions the host speaks.
type Initialize struct {
	Versions []int `json:"versions"`
}

// KVGet reads one key; the host answers an empty KVValue.
type KVGet struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

// KVValue is a key's value, absent here.
type KVValue struct {
	Value []byte `json:"value,omitempty"`
}

// ArtifactCreate opens an artifact by name.
type ArtifactCreate struct {
	Name string `json:"name"`
}

// Artifact names an open artifact and, when committed, its size.
type Artifact struct {
	Artifact string `json:"artifact_id"`
	Size     int64  `json:"size,omitempty"`
}

// ArtifactWrite is one chunk at Offset. Data is base64 in the JSON, as in
// our protocol's artifact.write.
type ArtifactWrite struct {
	Artifact string `json:"artifact_id"`
	Offset   int64  `json:"offset"`
	Data     []byte `json:"data"`
}

// ArtifactSize acknowledges a chunk with the artifact's new size.
type ArtifactSize struct {
	Size int64 `json:"size"`
}

// Record is a wall-clock reading (ns) under Key. ID is the request id of
// the extension's bench.wait call that records it: the host needs it to
// name that call in its cancel, since the library's Conn.Call returns the
// id only once the call is over.
type Record struct {
	Key string `json:"key"`
	NS  int64  `json:"ns"`
	ID  int64  `json:"id"`
}

// Cancel names the call to cancel, as $/cancelRequest's params do.
type Cancel struct {
	ID int64 `json:"id"`
}
