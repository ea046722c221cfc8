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

// Descriptors lists every method descriptor this package defines, sorted by
// name. The Desc values are plain data, laid out by the linker rather than
// registered by code that would run at every process start, so the list
// is written out here; a test reads the package's source and fails on a
// Desc missing from it.
func Descriptors() []Descriptor {
	out := []Descriptor{
		Initialize.Descriptor(), Configure.Descriptor(), Shutdown.Descriptor(), Validate.Descriptor(),
		OperationCall.Descriptor(), TaskRun.Descriptor(), CheckRun.Descriptor(), KVGet.Descriptor(),
		KVList.Descriptor(), KVCommit.Descriptor(), StateSequence.Descriptor(), StateEvent.Descriptor(),
		StateEvents.Descriptor(), StateWorkEvents.Descriptor(), StateScopes.Descriptor(),
		StateScope.Descriptor(), EventAccept.Descriptor(), SecretResolve.Descriptor(),
		IngressDeliver.Descriptor(), ArtifactCreate.Descriptor(), ArtifactWrite.Descriptor(),
		ArtifactCommit.Descriptor(), ArtifactAbort.Descriptor(), OperationEmitPlan.Descriptor(),
		EmitCommit.Descriptor(), DependencyFilter.Descriptor(), RunEnvironment.Descriptor(),
		ExecutorForget.Descriptor(), ExecutorRun.Descriptor(), ExecutorWait.Descriptor(),
		ExecutorRecover.Descriptor(), ExecutorStop.Descriptor(), ExecutorInterrupt.Descriptor(),
		ExecutorInject.Descriptor(), ExecutorResume.Descriptor(), ExecutorLive.Descriptor(),
		ExecutionPersistRecovery.Descriptor(), OperationWaitPlan.Descriptor(), WaitProgress.Descriptor(),
		OperationGate.Descriptor(), WorkAdmit.Descriptor(), WorkSettleHold.Descriptor(),
		WebhookHandle.Descriptor(), IngressPush.Descriptor(), IngressReconcile.Descriptor(),
		EventRender.Descriptor(), RouteMatch.Descriptor(), RouteSamples.Descriptor(),
		TimerArm.Descriptor(), TimerCancel.Descriptor(), RecurrenceNext.Descriptor(), WorkKindTrigger.Descriptor(),
		WorkCancel.Descriptor(),
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Host-to-extension methods whose wire types exist.
var (
	// Initialize negotiates the version and returns the manifest.
	Initialize = Desc[InitializeParams, InitializeResult]{Name: MethodInitialize}
	// Configure sends the current config generation.
	Configure = Desc[ConfigureParams, ConfigureResult]{Name: MethodConfigure}
	// Shutdown asks the extension to stop taking requests.
	Shutdown = Desc[ShutdownParams, ShutdownResult]{Name: MethodShutdown}
	// Validate asks the extension to check one config object.
	Validate = Desc[ValidateParams, ValidateResult]{Name: MethodValidate}
	// OperationCall runs a handler operation.
	OperationCall = Desc[OperationCallParams, OperationCallResult]{Name: MethodOperationCall}
	// TaskRun runs one pass of a declared task.
	TaskRun = Desc[TaskRunParams, TaskRunResult]{Name: MethodTaskRun}
	// CheckRun runs a declared doctor check.
	CheckRun = Desc[CheckRunParams, CheckRunResult]{Name: MethodCheckRun}
)

// Extension-to-host methods whose wire types exist.
var (
	// KVGet reads one key with its version.
	KVGet = Desc[KVGetParams, KVGetResult]{Name: MethodKVGet}
	// KVList lists a page of a namespace's keys.
	KVList = Desc[KVListParams, KVListResult]{Name: MethodKVList}
	// KVCommit applies one atomic batch of checks, writes and emissions.
	KVCommit = Desc[KVCommitParams, KVCommitResult]{Name: MethodKVCommit}
	// StateSequence reads the log's latest sequence.
	StateSequence = Desc[struct{}, StateSequenceResult]{Name: MethodStateSequence}
	// StateEvent reads one Event in the extension's scopes.
	StateEvent = Desc[StateEventParams, Event]{Name: MethodStateEvent}
	// StateEvents reads a page of the Events of the extension's scopes.
	StateEvents = Desc[StateEventsParams, StateEventsResult]{Name: MethodStateEvents}
	// StateWorkEvents reads a page of one Work's Events.
	StateWorkEvents = Desc[StateWorkEventsParams, StateEventsResult]{Name: MethodStateWorkEvents}
	// StateScopes lists the scopes that use the extension.
	StateScopes = Desc[struct{}, StateScopesResult]{Name: MethodStateScopes}
	// StateScope reads one scope that uses the extension.
	StateScope = Desc[StateScopeParams, ScopeView]{Name: MethodStateScope}
	// EventAccept derives an Event of one of the extension's families.
	EventAccept = Desc[EventAcceptParams, EventAcceptResult]{Name: MethodEventAccept}
	// SecretResolve resolves secret names the extension's entries select.
	SecretResolve = Desc[SecretResolveParams, SecretResolveResult]{Name: MethodSecretResolve}
	// IngressDeliver delivers one input from the extension's own receiver.
	IngressDeliver = Desc[IngressDeliverParams, IngressDeliverResult]{Name: MethodIngressDeliver}
	// ArtifactCreate opens an artifact writer.
	ArtifactCreate = Desc[ArtifactCreateParams, ArtifactCreateResult]{Name: MethodArtifactCreate}
	// ArtifactWrite writes one acknowledged chunk.
	ArtifactWrite = Desc[ArtifactWriteParams, ArtifactWriteResult]{Name: MethodArtifactWrite}
	// ArtifactCommit commits an artifact.
	ArtifactCommit = Desc[ArtifactCommitParams, ArtifactCommitResult]{Name: MethodArtifactCommit}
	// ArtifactAbort abandons an artifact writer.
	ArtifactAbort = Desc[ArtifactAbortParams, struct{}]{Name: MethodArtifactAbort}
)
