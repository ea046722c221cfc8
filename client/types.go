// Package client is the management API's Go client and its wire types: the
// CLI and the TUI talk to a running daemon only through it. The API is
// HTTP+JSON on a Unix socket in the state directory (owner-only), under
// /v1/.
package client

import (
	"time"

	"github.com/open-conduit/open-conduit/protocol"
)

// Status is GET /v1/status.
type Status struct {
	Version    string    `json:"version"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	State      string    `json:"state_dir"`
	Config     string    `json:"config"`
	Generation int64     `json:"generation"`
	Hash       string    `json:"hash"`
}

// Extension is one package in GET /v1/extensions.
type Extension struct {
	Name        string   `json:"name"`
	Version     string   `json:"version,omitempty"`
	Title       string   `json:"title,omitempty"`
	Source      string   `json:"source"`
	HostRun     bool     `json:"host_run,omitzero"`
	Replaces    bool     `json:"replaces_bundled,omitzero"`
	Dir         string   `json:"dir,omitempty"`
	State       string   `json:"state"`
	PID         int      `json:"pid,omitzero"`
	Protocol    int      `json:"protocol,omitzero"`
	Restarts    int      `json:"restarts"`
	Permissions []string `json:"permissions,omitempty"`
	LastError   string   `json:"last_error,omitempty"`
	GrantedEnv  []string `json:"granted_env,omitempty"`
	MissingEnv  []string `json:"missing_env,omitempty"`
	Log         string   `json:"log,omitempty"`
	Tasks       []Task   `json:"tasks,omitempty"`
	Refused     int64    `json:"refused_calls,omitzero"`
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

// Events is GET /v1/events: one page of the log after a cursor.
type Events struct {
	Events []protocol.Event `json:"events"`
	Next   uint64           `json:"next,omitzero"`
	Latest uint64           `json:"latest"`
}

// Record is a Work, Wait or other core record, as stored.
type Record struct {
	ID     string         `json:"id"`
	Record map[string]any `json:"record"`
}

// Records is GET /v1/work and GET /v1/waits.
type Records struct {
	Items []Record `json:"items"`
}

// Log is GET /v1/logs/{name}: the tail of an extension's stderr log.
type Log struct {
	Extension string   `json:"extension"`
	Path      string   `json:"path"`
	Lines     []string `json:"lines"`
}

// Check is one doctor check.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, info, warn, fail
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail"`
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
}

// Validation is POST /v1/config/validate.
type Validation struct {
	OK       bool      `json:"ok"`
	Problems []Problem `json:"problems,omitempty"`
}

// Applied is POST /v1/config/apply.
type Applied struct {
	Applied    bool      `json:"applied"`
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
