package pebblekv

import (
	"fmt"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// MaxConflicts is the largest page ObservationConflicts returns.
const MaxConflicts = 1000

// Observation is the binding of one observed (source, item, version) to the
// canonical envelope it was first seen with, and the Event it became,
// whether a reconcile scan observed it or a pushed delivery drafted it. It
// is written once and never changed: a later observation of the same
// identity either has the same envelope (nothing new) or conflicts.
type Observation struct {
	Source  string `json:"source"`
	Item    string `json:"item"`
	Version string `json:"version"`
	// Envelope is digest.ObservationEnvelope of the first observation.
	Envelope string `json:"envelope"`
	// Event is the ID of the Event the observation was accepted as.
	Event string    `json:"event"`
	Seen  time.Time `json:"seen"`
}

// ObservationConflict records that an identity bound to one envelope was
// observed with another and refused. Its fields are the identity, the bound
// and the refused envelopes, how often it was refused and when last.
type ObservationConflict struct {
	Source   string    `json:"source"`
	Item     string    `json:"item"`
	Version  string    `json:"version"`
	Bound    string    `json:"bound"`
	Refused  string    `json:"refused"`
	Count    int       `json:"count"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	LastScan string    `json:"last_scan,omitempty"`
	// LastDelivery is the delivery ID of the pushed delivery refused last;
	// empty when a reconcile scan was.
	LastDelivery string `json:"last_delivery,omitempty"`
}

// Checkpoint is where a source's last complete reconcile scan left off: the
// package's opaque checkpoint, kept for the next scan. Only a complete scan
// writes it.
type Checkpoint struct {
	Source string `json:"source"`
	// Owner is the package whose source it is.
	Owner      string    `json:"owner"`
	Checkpoint string    `json:"checkpoint"`
	Completed  time.Time `json:"completed"`
	// Scans counts the complete scans.
	Scans int `json:"scans"`
}

func observationKey(source, item, version string) []byte {
	return famKey(famObservation, version, source, item)
}

func conflictKey(source, item, version string) []byte {
	return famKey(famObsConflict, version, source, item)
}

func checkpointKey(source string) []byte { return famKey(famCheckpoint, source) }

// PutObservation binds o's identity to its envelope. An identity already
// bound is protocol.ErrConflict, whatever its envelope, and nothing is
// written: a binding is never replaced.
func (tx *Tx) PutObservation(o Observation) error {
	if o.Source == "" || o.Item == "" || o.Version == "" || o.Envelope == "" || o.Event == "" {
		return protocol.Errorf(protocol.ErrInvalid, "an observation needs its source, item, version, envelope and Event (got %q, %q, %q)", o.Source, o.Item, o.Version)
	}
	_, found, err := tx.Observation(o.Source, o.Item, o.Version)
	if err != nil {
		return err
	}
	if found {
		return protocol.Errorf(protocol.ErrConflict, "observation %s of %s is already bound", protocol.ObservationDeliveryID(o.Item, o.Version), o.Source)
	}
	o.Seen = o.Seen.UTC()
	raw, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("pebblekv: encode observation: %w", err)
	}
	return tx.set(observationKey(o.Source, o.Item, o.Version), raw)
}

// Observation reads the binding of (source, item, version); found false
// means the identity was never accepted.
func (r *Reader) Observation(source, item, version string) (o Observation, found bool, err error) {
	raw, found, err := r.get(observationKey(source, item, version))
	if err != nil || !found {
		return Observation{}, false, err
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return Observation{}, false, fmt.Errorf("pebblekv: decode observation %s %s@%s: %w", source, item, version, err)
	}
	return o, true, nil
}

// RecordConflict counts one refusal of c's identity with c.Refused at now:
// the first for the identity writes c; a later one keeps First and adds
// one to Count.
func (tx *Tx) RecordConflict(c ObservationConflict, now time.Time) (ObservationConflict, error) {
	if c.Source == "" || c.Item == "" || c.Version == "" {
		return c, protocol.Errorf(protocol.ErrInvalid, "a conflict needs its source, item and version")
	}
	key := conflictKey(c.Source, c.Item, c.Version)
	raw, found, err := tx.get(key)
	if err != nil {
		return c, err
	}
	now = now.UTC()
	c.Count, c.First = 1, now
	if found {
		var old ObservationConflict
		if err := json.Unmarshal(raw, &old); err != nil {
			return c, fmt.Errorf("pebblekv: decode conflict %s %s@%s: %w", c.Source, c.Item, c.Version, err)
		}
		c.Count, c.First = old.Count+1, old.First
	}
	c.Last = now
	if raw, err = json.Marshal(c); err != nil {
		return c, fmt.Errorf("pebblekv: encode conflict: %w", err)
	}
	return c, tx.set(key, raw)
}

// ObservationConflicts reads up to limit of source's refused identities
// (limit <= 0 or over MaxConflicts is MaxConflicts), in item order.
func (r *Reader) ObservationConflicts(source string, limit int) ([]ObservationConflict, error) {
	page := protocol.NewPageBudget(limit, MaxConflicts)
	out := []ObservationConflict{}
	lower := famKey(famObsConflict, "", source)
	err := r.scan(lower, prefixEnd(lower), func(_, v []byte) (bool, error) {
		if !page.Add(len(v)) {
			return false, nil
		}
		var c ObservationConflict
		if err := json.Unmarshal(v, &c); err != nil {
			return false, fmt.Errorf("pebblekv: decode conflict of %s: %w", source, err)
		}
		out = append(out, c)
		return true, nil
	})
	return out, err
}

// PutCheckpoint writes source's checkpoint, replacing the one before.
func (tx *Tx) PutCheckpoint(c Checkpoint) error {
	if c.Source == "" || c.Owner == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a checkpoint needs its source and owner")
	}
	c.Completed = c.Completed.UTC()
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("pebblekv: encode checkpoint: %w", err)
	}
	return tx.set(checkpointKey(c.Source), raw)
}

// Checkpoint reads source's checkpoint; found false means no scan of it
// has completed.
func (r *Reader) Checkpoint(source string) (c Checkpoint, found bool, err error) {
	raw, found, err := r.get(checkpointKey(source))
	if err != nil || !found {
		return Checkpoint{}, false, err
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return Checkpoint{}, false, fmt.Errorf("pebblekv: decode checkpoint of %s: %w", source, err)
	}
	return c, true, nil
}
