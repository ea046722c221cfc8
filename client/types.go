// Package client is the management API's Go client and its wire types: the
// CLI and the TUI talk to a running daemon only through it. The API is
// HTTP+JSON on a Unix socket in the state directory (owner-only), under
// /v1/.
package client

import (
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// Daemon phases, as Status reports them.
const (
	// PhaseStarting: the API answers while packages start and the
	// configuration is checked; nothing is configured yet.
	PhaseStarting = "starting"
	// PhaseRunning: the configuration is live.
	PhaseRunning = "running"
	// PhaseStopping: the daemon is shutting down.
	PhaseStopping = "stopping"
)

// Status is GET /v1/status.
type Status struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	State   string    `json:"state_dir"`
	// Phase is starting, running or stopping.
	Phase string `json:"phase"`
	// Config is where the live generation came from: its file, or
	// "embedded default".
	Config string `json:"config"`
	// ConfigFile is the file serve reads at start and config apply writes.
	ConfigFile string `json:"config_file"`
	Generation int64  `json:"generation"`
	Hash       string `json:"hash,omitempty"`
	// Extensions counts the packages, and Running those that serve.
	Extensions int `json:"extensions"`
	Running    int `json:"running"`
	// Webhooks is the address the webhook listener listens on ("" while
	// it does not).
	Webhooks string `json:"webhooks,omitempty"`
}

// Extension is one package in GET /v1/extensions.
type Extension struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	Title    string `json:"title,omitempty"`
	Source   string `json:"source"`
	HostRun  bool   `json:"host_run,omitzero"`
	Replaces bool   `json:"replaces_bundled,omitzero"`
	Dir      string `json:"dir,omitempty"`
	State    string `json:"state"`
	// Code is the stable code of the state's cause (start_failed,
	// handshake_failed, manifest_mismatch, kv_downgrade, transport for a
	// crash, …), empty when running cleanly; Remedy says what to change.
	Code        string    `json:"code,omitempty"`
	Remedy      string    `json:"remedy,omitempty"`
	PID         int       `json:"pid,omitzero"`
	Started     time.Time `json:"started,omitzero"`
	NextRestart time.Time `json:"next_restart,omitzero"`
	// Pending says what a restart of the package would change (its files
	// changed or went away on disk since it started).
	Pending     string   `json:"pending,omitempty"`
	Protocol    int      `json:"protocol,omitzero"`
	Restarts    int      `json:"restarts"`
	Permissions []string `json:"permissions,omitempty"`
	LastError   string   `json:"last_error,omitempty"`
	GrantedEnv  []string `json:"granted_env,omitempty"`
	MissingEnv  []string `json:"missing_env,omitempty"`
	Log         string   `json:"log,omitempty"`
	Tasks       []Task   `json:"tasks,omitempty"`
	Refused     int64    `json:"refused_calls,omitzero"`
	// Surfaces summarizes what the package's manifest provides, one
	// "kind name" entry per surface ("executor shell", "operation
	// notes.write", "webhooks"), in the manifest's order.
	Surfaces []string `json:"surfaces,omitempty"`
}

// Task is one declared task's last run.
type Task struct {
	Name    string    `json:"name"`
	Every   int       `json:"interval_seconds"`
	Runs    int       `json:"runs"`
	LastRun time.Time `json:"last_run,omitzero"`
	LastErr string    `json:"last_error,omitempty"`
}

// Skipped is a package discovery reported and skipped.
type Skipped struct {
	Dir     string `json:"dir"`
	Name    string `json:"name,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Extensions is GET /v1/extensions.
type Extensions struct {
	Extensions []Extension `json:"extensions"`
	Skipped    []Skipped   `json:"skipped,omitempty"`
}

// RestartRequest is POST /v1/extensions/{name}/restart.
type RestartRequest struct {
	// WaitSeconds bounds how long the answer waits for the new process's
	// handshake; 0 answers at once. The restart goes on either way.
	WaitSeconds int `json:"wait_seconds,omitzero"`
}

// RestartResult is the package as the restart left it: Done when the
// restart finished within the wait (running, or failed with Code).
type RestartResult struct {
	Done      bool      `json:"done"`
	Extension Extension `json:"extension"`
}

// Rescan is POST /v1/extensions/rescan: what a new discovery of the
// installed and bundled packages changed. New packages are started; a
// package whose files changed or went away keeps running as it started
// until it is restarted.
type Rescan struct {
	Added   []string  `json:"added,omitempty"`
	Changed []string  `json:"changed,omitempty"`
	Removed []string  `json:"removed,omitempty"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Refused are new packages the set could not admit (a name conflict).
	Refused []Refusal `json:"refused,omitempty"`
}

// Events is GET /v1/events: one page of the log after a cursor.
type Events struct {
	Events []protocol.Event `json:"events"`
	Next   uint64           `json:"next,omitzero"`
	Latest uint64           `json:"latest"`
	// Routes says where each listed Event in a scope was routed, by its
	// ID.
	Routes map[string]EventRoute `json:"routes,omitempty"`
}

// Log is GET /v1/logs/{name}: the tail of an extension's stderr log, or
// what was appended after an offset.
type Log struct {
	Extension string   `json:"extension"`
	Path      string   `json:"path"`
	Lines     []string `json:"lines"`
	// Offset is the log's size after the lines: ask from it to read on.
	Offset int64 `json:"offset"`
	// Reset says the log started over (it is bounded and begins again with
	// a marker line) since the offset asked from; Lines start at its top.
	Reset bool `json:"reset,omitzero"`
}

// ConfigView is GET /v1/config: the live generation as the operator wrote
// it (secrets appear as their references, never their values).
type ConfigView struct {
	Generation int64  `json:"generation"`
	Hash       string `json:"hash"`
	// Source is the file the generation came from, or "embedded default".
	Source string `json:"source"`
	// File is where serve reads the config and config apply writes it.
	File string `json:"file"`
	// Text is the config exactly as the operator wrote it.
	Text string `json:"text"`
}

// Check is one doctor check.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, info, warn, fail
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail"`
	// Remedy says what to change, for a check that is not ok.
	Remedy string `json:"remedy,omitempty"`
}

// Doctor is GET /v1/doctor.
type Doctor struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Problem is one config problem at a JSON path.
type Problem struct {
	Path     string `json:"path"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	// Line and Column place a parse problem in the text (1-based).
	Line   int `json:"line,omitzero"`
	Column int `json:"column,omitzero"`
}

// Validation is POST /v1/config/validate.
type Validation struct {
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems,omitempty"`
}

// Applied is POST /v1/config/apply and POST /v1/config/reload.
type Applied struct {
	Applied bool `json:"applied"`
	// Unchanged: the config is the live one; nothing was applied and the
	// generation stays.
	Unchanged bool `json:"unchanged,omitzero"`
	// File is where the applied config was written, for serve to read at
	// its next start.
	File       string    `json:"file,omitempty"`
	Generation int64     `json:"generation,omitzero"`
	Hash       string    `json:"hash,omitempty"`
	Problems   []Problem `json:"problems,omitempty"`
	Refused    []Refusal `json:"refused,omitempty"`
}

// Refusal is a package that refused the applied configuration.
type Refusal struct {
	Extension string `json:"extension"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

// Error is the body of every non-2xx answer.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// CallRequest is POST /v1/extensions/{name}/call: an operator calls one of
// a package's handler operations, in a scope, as the caller "operator".
type CallRequest struct {
	Operation string         `json:"operation"`
	Scope     string         `json:"scope_id,omitempty"`
	Input     map[string]any `json:"input,omitempty"`
	RequestID string         `json:"request_id,omitempty"`
}

// CallResult is the operation's output, or the code it refused with.
type CallResult struct {
	Output  protocol.Payload `json:"output,omitzero"`
	Code    string           `json:"code,omitempty"`
	Message string           `json:"message,omitempty"`
}

// DoctorOptions choose what a doctor run includes beyond its usual checks.
type DoctorOptions struct {
	// Deep also reads the whole store: the checksum of every block of every
	// file, and Pebble's consistency check of its levels. It costs a read
	// of the store, up to 45 s.
	Deep bool
}
