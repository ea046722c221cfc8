package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Scan is how one reconcile scan of a source ended: POST
// /v1/sources/{name}/reconcile answers it, and GET /v1/sources shows each
// source's last.
type Scan struct {
	Package string `json:"package"`
	Source  string `json:"source"`
	// Pages counts the pages the package answered, Observations their
	// observations, Accepted the Events newly accepted from them (an
	// observation seen before is not accepted again).
	Pages        int `json:"pages"`
	Observations int `json:"observations"`
	Accepted     int `json:"accepted"`
	// Complete says the scan reached its last page and advanced the
	// checkpoint to Checkpoint; otherwise Checkpoint is the one it started
	// from, unchanged, and Error says what cut the scan short.
	Complete   bool      `json:"complete"`
	Checkpoint string    `json:"checkpoint"`
	Error      *Error    `json:"error,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	Ended      time.Time `json:"ended,omitzero"`
}

// Source is one source a package's last configure registered, as GET
// /v1/sources lists it.
type Source struct {
	Package  string   `json:"package"`
	Name     string   `json:"name"`
	Families []string `json:"families,omitempty"`
	// Reconcile says the package scans the source; a push-only source
	// (false) is never scanned and has no checkpoint.
	Reconcile bool `json:"reconcile"`
	// Checkpoint is what the last complete scan answered; Completed when
	// it ended and Scans how many completed (all zero before the first).
	Checkpoint string    `json:"checkpoint"`
	Completed  time.Time `json:"completed,omitzero"`
	Scans      int       `json:"scans"`
	// LastScan is this daemon run's last scan of the source, complete or
	// not (none before one).
	LastScan *Scan `json:"last_scan,omitempty"`
	// NextScan is when the daemon scans it next on its own (zero when it
	// has not planned one: its package is not running).
	NextScan time.Time `json:"next_scan,omitzero"`
}

// Sources is GET /v1/sources: every registered source, in package and
// source order.
type Sources struct {
	Sources []Source `json:"sources"`
}

// Sources lists the registered sources with their checkpoints and scans.
func (c *Client) Sources(ctx context.Context) (Sources, error) {
	var s Sources
	return s, c.do(ctx, http.MethodGet, "/v1/sources", nil, &s)
}

// Reconcile scans source now and answers how the scan ended; a scan cut
// short is an answer (Complete false, with its Error), not an error. A
// source no package registered is an error (not_found).
func (c *Client) Reconcile(ctx context.Context, source string) (Scan, error) {
	var s Scan
	return s, c.do(ctx, http.MethodPost, "/v1/sources/"+url.PathEscape(source)+"/reconcile", nil, &s)
}
