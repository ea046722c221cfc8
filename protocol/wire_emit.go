package protocol

// OperationEmitParams asks an emit operation's package for the Event a
// toolbelt call emits: the same shape as operation.call.
type OperationEmitParams = OperationCallParams

// OperationEmitResult is the Event the call emits, as a draft the host
// completes and accepts.
type OperationEmitResult struct {
	Event EmitDraft `json:"event"`
}

// EmitDraft is the Event an emit operation plans. The host accepts it into
// the calling Work's scope, derived from the Work's trigger Event (so the
// causal bounds of that chain apply), at the host's present.
type EmitDraft struct {
	// Type is one of the package's declared families.
	Type string `json:"type"`
	// Source is the package's name or <name>/<suffix>; empty is the name.
	Source string `json:"source,omitempty"`
	// DeliveryID is the Event's identity within its source. Empty: the
	// host names it from the Work and the call's request ID (a fresh one
	// for a call without one). Emitting one that is already accepted
	// answers that Event and commits nothing.
	DeliveryID string `json:"delivery_id,omitempty"`
	// Payload is the Event's payload: a schema absent or the current
	// version of one of the package's schemas.
	Payload Payload `json:"payload"`
}

// EmitCommitParams asks an emit operation that declares commit for the
// records that commit with its accepted Event, inside the emission's
// transaction: the call, and the Event as accepted (its ID, sequence, root
// and depth exist only there).
type EmitCommitParams struct {
	Operation string    `json:"operation"`
	Input     Payload   `json:"input"`
	Authority Authority `json:"authority"`
	RequestID string    `json:"request_id,omitempty"`
	Event     Event     `json:"event"`
}

// EmitCommitResult is the records: checks, puts and deletes in the
// package's own namespaces (no emissions), applied with the Event as one
// atomic unit. None is nothing to write.
type EmitCommitResult struct {
	Records *KVCommitParams `json:"records,omitempty"`
}

// Emit operation methods whose wire types exist.
var (
	// OperationEmitPlan plans the Event of an emit operation's call.
	OperationEmitPlan = Desc[OperationEmitParams, OperationEmitResult]{Name: MethodOperationEmit}
	// EmitCommit answers the records that commit with an accepted Event.
	EmitCommit = Desc[EmitCommitParams, EmitCommitResult]{Name: MethodEmitCommit}
)
