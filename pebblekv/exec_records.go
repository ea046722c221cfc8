package pebblekv

import (
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// Execution states.
const (
	// ExecRunning: the attempt runs (or is being recovered) under Epoch.
	ExecRunning = "running"
	// ExecSettled: the attempt ended with Outcome; its token is dead.
	ExecSettled = "settled"
)

// Execution is one attempt of a Work on an executor.
type Execution struct {
	// ID is NewExecutionID's: unguessable.
	ID      string `json:"id"`
	Work    string `json:"work_id"`
	Scope   string `json:"scope_id"`
	Attempt int    `json:"attempt"`
	// Package declares Executor; Binding is the Work's binding.
	Package  string `json:"package"`
	Executor string `json:"executor"`
	Binding  string `json:"binding,omitempty"`
	// Epoch is the lease: each recovery takes the next one, and a call
	// naming an older one is refused.
	Epoch uint64 `json:"lease_epoch"`
	// TokenHash is TokenHash of the execution's current toolbelt token;
	// "" once settled.
	TokenHash string `json:"token_hash,omitempty"`
	State     string `json:"state"`
	// Outcome (a protocol.Outcome*), Reason and ExitCode are set when
	// settled.
	Outcome  string `json:"outcome,omitempty"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Declared is the outcome the execution declared through the toolbelt
	// (declare_outcome), with its reason.
	Declared       string `json:"declared,omitempty"`
	DeclaredReason string `json:"declared_reason,omitempty"`
	// Wait is the Wait declared during the execution, if any.
	Wait     string         `json:"wait_id,omitempty"`
	Recovery jsontext.Value `json:"recovery,omitzero"`
	Woke     *protocol.Wake `json:"woke,omitempty"`
	Started  time.Time      `json:"started"`
	Settled  time.Time      `json:"settled,omitzero"`
}

// Wait states.
const (
	WaitActive    = "active"
	WaitWoken     = "woken"
	WaitCancelled = "cancelled"
)

// Wait is what a waiting Work waits for: an Event routed to it, or its due
// time. A Work has at most one active Wait.
type Wait struct {
	// ID is NewWaitID's.
	ID        string `json:"id"`
	Work      string `json:"work_id"`
	Scope     string `json:"scope_id"`
	Execution string `json:"execution_id"`
	// Owner is the package whose wait operation declared it; "" for the
	// builtin wait.
	Owner       string `json:"owner,omitempty"`
	Description string `json:"description,omitempty"`
	Progress    string `json:"progress,omitempty"`
	// Due is when the Wait wakes without an Event; zero for no timeout.
	Due     time.Time      `json:"due,omitzero"`
	State   string         `json:"state"`
	Wake    *protocol.Wake `json:"wake,omitempty"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// OpResult is a handler operation's committed result, replayed to a retry
// of the call with the same request ID.
type OpResult struct {
	Operation string           `json:"operation"`
	Output    protocol.Payload `json:"output"`
	At        time.Time        `json:"at"`
}

// Artifact states.
const (
	ArtifactOpen      = "open"
	ArtifactCommitted = "committed"
)

// Artifact is one output an execution wrote: open while chunks arrive,
// committed with its content's SHA-256 (the content-addressed store's
// name for its bytes).
type Artifact struct {
	ID        string    `json:"id"`
	Execution string    `json:"execution_id,omitempty"`
	Work      string    `json:"work_id,omitempty"`
	Package   string    `json:"package"`
	Name      string    `json:"name"`
	MediaType string    `json:"media_type,omitempty"`
	Size      int64     `json:"size"`
	Digest    string    `json:"digest,omitempty"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Committed time.Time `json:"committed,omitzero"`
}

// errNotStored answers the records of running Work until they are stored.
var errNotStored = errors.New("pebblekv: executions, Waits, operation results and artifacts are not stored yet")

// NewExecutionID returns an unguessable execution ID: "x_" and 26 base32
// characters of 128 random bits.
func NewExecutionID() string { return "" }

// NewWaitID returns a new Wait ID: "wt_" and 26 base32 characters.
func NewWaitID() string { return "" }

// NewArtifactID returns a new artifact ID: "a_" and 26 base32 characters.
func NewArtifactID() string { return "" }

// NewToken returns a fresh toolbelt bearer token and its TokenHash.
func NewToken() (token, hash string) { return "", "" }

// TokenHash is the hex SHA-256 of token: what the store keeps of it.
func TokenHash(token string) string { return "" }

// PutExecution writes x with its indexes (by Work and attempt; running).
func (tx *Tx) PutExecution(x Execution) error { return errNotStored }

// Execution reads one execution.
func (r *Reader) Execution(id string) (Execution, bool, error) {
	return Execution{}, false, errNotStored
}

// ExecutionsOf lists a Work's executions by attempt.
func (r *Reader) ExecutionsOf(work string) ([]Execution, error) { return nil, errNotStored }

// RunningExecutions lists every running execution.
func (r *Reader) RunningExecutions() ([]Execution, error) { return nil, errNotStored }

// PutWait writes w with its indexes; a second active Wait of a Work is
// protocol.ErrConflict.
func (tx *Tx) PutWait(w Wait) error { return errNotStored }

// Wait reads one Wait.
func (r *Reader) Wait(id string) (Wait, bool, error) { return Wait{}, false, errNotStored }

// ActiveWait is a Work's active Wait.
func (r *Reader) ActiveWait(work string) (Wait, bool, error) { return Wait{}, false, errNotStored }

// ActiveWaits pages the active Waits in ID order after after, by count and
// bytes.
func (r *Reader) ActiveWaits(after string, limit int) ([]Wait, bool, error) {
	return nil, false, errNotStored
}

// DueWaits lists active Waits due at or before now, earliest first.
func (r *Reader) DueWaits(now time.Time, limit int) ([]Wait, error) { return nil, errNotStored }

// NextWaitDue is the earliest due time of an active Wait.
func (r *Reader) NextWaitDue() (time.Time, bool, error) { return time.Time{}, false, errNotStored }

// PutOpResult commits a handler operation's result under (pkg, request
// ID).
func (tx *Tx) PutOpResult(pkg, requestID string, res OpResult) error { return errNotStored }

// OpResult reads the result committed under (pkg, request ID).
func (r *Reader) OpResult(pkg, requestID string) (OpResult, bool, error) {
	return OpResult{}, false, errNotStored
}

// PutArtifact writes a with its indexes (by execution, by Work).
func (tx *Tx) PutArtifact(a Artifact) error { return errNotStored }

// Artifact reads one artifact.
func (r *Reader) Artifact(id string) (Artifact, bool, error) { return Artifact{}, false, errNotStored }

// ArtifactsOf lists an execution's artifacts.
func (r *Reader) ArtifactsOf(execution string) ([]Artifact, error) { return nil, errNotStored }

// ArtifactsOfWork lists a Work's artifacts.
func (r *Reader) ArtifactsOfWork(work string) ([]Artifact, error) { return nil, errNotStored }
