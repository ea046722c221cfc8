package protocol

import "strings"

// Reconcile's pacing and the runtime's page limits.
const (
	// ReconcileIntervalMillis is how often the host scans each registered
	// source of a package declaring ingress.
	ReconcileIntervalMillis = 60_000
	// ReconcilePageDeadlineMillis bounds each ingress.reconcile call: one
	// page. A page that takes longer ends the scan, incomplete.
	ReconcilePageDeadlineMillis = 30_000
	// ReconcilePageItems is the most observations one page may carry.
	ReconcilePageItems = 1000
	// ReconcilePageBytes is the most one page's observations may take as
	// they encode; well under MaxMessageBytes, so a full page always fits
	// one line.
	ReconcilePageBytes = 8 << 20
)

// ReconcileLimits bound one page of ingress.reconcile. The host refuses a
// page over either, and the scan it belongs to ends incomplete.
type ReconcileLimits struct {
	Items int `json:"items"`
	Bytes int `json:"bytes"`
}

// IngressReconcileParams asks for one page of a scan of source: what the
// outside system holds now. Checkpoint is what the last complete scan
// answered ("" before the first); PageToken is the previous page's
// NextPageToken ("" for the first page of a scan).
type IngressReconcileParams struct {
	Source     string          `json:"source"`
	Checkpoint string          `json:"checkpoint,omitempty"`
	PageToken  string          `json:"page_token,omitempty"`
	Limits     ReconcileLimits `json:"limits"`
}

// IngressReconcileResult is one page. A page that is not Complete names the
// next page's token; a Complete one names none, and its Checkpoint is kept
// for the next scan. The host advances the checkpoint only when a whole
// scan completes, so a scan cut short infers nothing (no absence) and the
// next one starts again from the old checkpoint.
type IngressReconcileResult struct {
	Observations  []Observation `json:"observations,omitempty"`
	NextPageToken string        `json:"next_page_token,omitempty"`
	Complete      bool          `json:"complete,omitzero"`
	Checkpoint    string        `json:"checkpoint,omitempty"`
}

// Observation is the state of one outside item at one version. The host
// binds (source, item, version) to the observation's canonical envelope
// (ObservationEnvelope) the first time it sees it and accepts it as an
// Event with delivery ID ObservationDeliveryID(item, version); seen again
// with the same envelope it is nothing new, and with another envelope it is
// a conflict the host refuses, the same way each time. A package that
// changes the payload of unchanged items must so mint new versions (for
// example by including its schema version in them).
type Observation struct {
	// Item names the outside item; it may not contain '@'.
	Item    string `json:"item"`
	Version string `json:"version"`
	// Scope is the scope the Event goes to: one that uses the package.
	Scope string `json:"scope_id"`
	// Type is the Event's type: one of the source's registered families.
	// It may be left out when the source registered exactly one.
	Type    string  `json:"type,omitempty"`
	Payload Payload `json:"payload"`
}

// ObservationDeliveryID is the delivery ID of the Event an observation
// becomes: "<item>@<version>". Since an item holds no '@', no two (item,
// version) pairs share one.
func ObservationDeliveryID(item, version string) string { return item + "@" + version }

// CheckObservationIdentity refuses an observation the host could not bind:
// an empty item or version, or an item holding '@'.
func CheckObservationIdentity(o Observation) error {
	switch {
	case o.Item == "" || o.Version == "":
		return Errorf(ErrInvalid, "an observation needs an item and a version (item %q, version %q)", o.Item, o.Version)
	case strings.Contains(o.Item, "@"):
		return Errorf(ErrInvalid, "observation item %q holds '@'; name items without it, so item@version is unambiguous", o.Item)
	}
	return nil
}

// IngressReconcile asks for one page of a source's scan.
var IngressReconcile = Desc[IngressReconcileParams, IngressReconcileResult]{Name: MethodIngressReconcile}
