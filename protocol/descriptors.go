package protocol

import (
	"reflect"
	"sort"
)

// Desc binds a method's name to the Go types of its params and result, so
// the sender and the server of a method share one definition: a server
// registers a handler from it and a caller invokes through it (package
// jsonrpc's Serve and Invoke), and neither can spell the name or pick the
// types differently. A method with no params fields takes struct{}.
type Desc[P, R any] struct {
	// Name is the catalogued method name (a Method* constant).
	Name string
}

// Descriptor is a Desc with its types erased, for listing and tests.
type Descriptor struct {
	Name   string
	Params reflect.Type
	Result reflect.Type
}

// Descriptor erases d's types.
func (d Desc[P, R]) Descriptor() Descriptor {
	return Descriptor{Name: d.Name, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

// descriptors is every Desc this package defines, in definition order.
var descriptors []Descriptor

// describe defines a descriptor and lists it.
func describe[P, R any](name string) Desc[P, R] {
	d := Desc[P, R]{Name: name}
	descriptors = append(descriptors, d.Descriptor())
	return d
}

// Descriptors lists every method descriptor this package defines, sorted by
// name.
func Descriptors() []Descriptor {
	out := append([]Descriptor(nil), descriptors...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Host-to-extension methods whose wire types exist.
var (
	// Initialize negotiates the version and returns the manifest.
	Initialize = describe[InitializeParams, InitializeResult](MethodInitialize)
	// Configure sends the current config generation.
	Configure = describe[ConfigureParams, ConfigureResult](MethodConfigure)
	// Shutdown asks the extension to stop taking requests.
	Shutdown = describe[ShutdownParams, ShutdownResult](MethodShutdown)
	// Validate asks the extension to check one config object.
	Validate = describe[ValidateParams, ValidateResult](MethodValidate)
	// OperationCall runs a handler operation.
	OperationCall = describe[OperationCallParams, OperationCallResult](MethodOperationCall)
	// TaskRun runs one pass of a declared task.
	TaskRun = describe[TaskRunParams, TaskRunResult](MethodTaskRun)
	// CheckRun runs a declared doctor check.
	CheckRun = describe[CheckRunParams, CheckRunResult](MethodCheckRun)
)

// Extension-to-host methods whose wire types exist.
var (
	// KVGet reads one key with its version.
	KVGet = describe[KVGetParams, KVGetResult](MethodKVGet)
	// KVList lists a page of a namespace's keys.
	KVList = describe[KVListParams, KVListResult](MethodKVList)
	// KVCommit applies one atomic batch of checks, writes and emissions.
	KVCommit = describe[KVCommitParams, KVCommitResult](MethodKVCommit)
	// StateSequence reads the log's latest sequence.
	StateSequence = describe[struct{}, StateSequenceResult](MethodStateSequence)
	// StateEvent reads one Event in the extension's scopes.
	StateEvent = describe[StateEventParams, Event](MethodStateEvent)
	// StateEvents reads a page of the Events of the extension's scopes.
	StateEvents = describe[StateEventsParams, StateEventsResult](MethodStateEvents)
	// StateWorkEvents reads a page of one Work's Events.
	StateWorkEvents = describe[StateWorkEventsParams, StateEventsResult](MethodStateWorkEvents)
	// StateScopes lists the scopes that use the extension.
	StateScopes = describe[struct{}, StateScopesResult](MethodStateScopes)
	// StateScope reads one scope that uses the extension.
	StateScope = describe[StateScopeParams, ScopeView](MethodStateScope)
	// EventAccept derives an Event of one of the extension's families.
	EventAccept = describe[EventAcceptParams, EventAcceptResult](MethodEventAccept)
	// SecretResolve resolves secret names the extension's entries select.
	SecretResolve = describe[SecretResolveParams, SecretResolveResult](MethodSecretResolve)
	// IngressDeliver delivers one input from the extension's own receiver.
	IngressDeliver = describe[IngressDeliverParams, IngressDeliverResult](MethodIngressDeliver)
	// ArtifactCreate opens an artifact writer.
	ArtifactCreate = describe[ArtifactCreateParams, ArtifactCreateResult](MethodArtifactCreate)
	// ArtifactWrite writes one acknowledged chunk.
	ArtifactWrite = describe[ArtifactWriteParams, ArtifactWriteResult](MethodArtifactWrite)
	// ArtifactCommit commits an artifact.
	ArtifactCommit = describe[ArtifactCommitParams, ArtifactCommitResult](MethodArtifactCommit)
	// ArtifactAbort abandons an artifact writer.
	ArtifactAbort = describe[ArtifactAbortParams, struct{}](MethodArtifactAbort)
)
