package protocol

// WorkView is a Work as a package sees it.
type WorkView struct {
	ID      string   `json:"id"`
	Scope   string   `json:"scope_id"`
	Kind    string   `json:"kind"`
	Keys    []string `json:"keys,omitempty"`
	State   string   `json:"state"`
	Display *Display `json:"display,omitempty"`
}

// WorkKindTriggerParams asks a Work kind's package which input of a new Work
// is its trigger. It runs inside the creating transaction, bounded, and may
// make no callback.
type WorkKindTriggerParams struct {
	Kind   string   `json:"kind"`
	Work   WorkView `json:"work"`
	Inputs []Event  `json:"inputs"`
}

// WorkKindTriggerResult names the trigger input by Event ID; an ID that is
// not one of the inputs falls back to the first input.
type WorkKindTriggerResult struct {
	Trigger string `json:"trigger"`
}

// WorkCancelParams cancels a Work of one of the caller's own kinds, in one
// of its scopes.
type WorkCancelParams struct {
	WorkID string `json:"work_id"`
	Reason string `json:"reason,omitempty"`
}

// WorkCancelResult is empty: the Work is cancelled.
type WorkCancelResult struct{}

// Work methods whose wire types exist.
var (
	// WorkKindTrigger picks a new Work's trigger input.
	WorkKindTrigger = Desc[WorkKindTriggerParams, WorkKindTriggerResult]{Name: MethodWorkKindTrigger}
	// WorkCancel cancels Work of an own kind.
	WorkCancel = Desc[WorkCancelParams, WorkCancelResult]{Name: MethodWorkCancel}
)
