package pebblekv

import (
	"fmt"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
)

// Record kinds of the core model. Any kind of lower-case letters, digits,
// '-', '_' and '.' is accepted. Work, timers, executions, Waits and
// operation results are typed records with their own indexes (PutWork,
// PutTimer, PutExecution, PutWait, PutOpResult), not generic records of
// these kinds.
const (
	KindWork      = "work"
	KindWait      = "wait"
	KindTimer     = "timer"
	KindExecution = "execution"
	// KindOpResult names operation results (PutOpResult).
	KindOpResult = "opresult"
)

// checkRecord refuses a malformed kind or an empty id.
func checkRecord(kind, id string) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if id == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a %s record needs an ID", kind)
	}
	return nil
}

func checkKind(kind string) error {
	ok := kind != "" && len(kind) <= protocol.MaxIdentifierLen
	for i := 0; ok && i < len(kind); i++ {
		c := kind[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	if !ok {
		return protocol.Errorf(protocol.ErrInvalid, "record kind %q is not lower-case letters, digits, '-', '_' or '.'", kind)
	}
	return nil
}

// PutRecord writes v, JSON-encoded, as the record kind/id, replacing any.
func (tx *Tx) PutRecord(kind, id string, v any) error {
	if err := checkRecord(kind, id); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("pebblekv: encode %s record %q: %w", kind, id, err)
	}
	return tx.set(recordKey(kind, id), raw)
}

// GetRecord decodes the record kind/id into v; found false means there is
// none, and v is untouched.
func (r *Reader) GetRecord(kind, id string, v any) (found bool, err error) {
	if err := checkRecord(kind, id); err != nil {
		return false, err
	}
	raw, found, err := r.get(recordKey(kind, id))
	if err != nil || !found {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("pebblekv: decode %s record %q: %w", kind, id, err)
	}
	return true, nil
}

// ListRecords calls fn with each record of kind whose ID starts with prefix,
// in ID order, until fn returns an error, which ListRecords returns. raw is
// the record's JSON, valid only during the call: decode or copy it.
func (r *Reader) ListRecords(kind, prefix string, fn func(id string, raw []byte) error) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	n := len(recordPrefix(kind))
	lower := recordKey(kind, prefix)
	return r.scan(lower, prefixEnd(lower), func(k, v []byte) (bool, error) {
		if err := fn(string(k[n:]), v); err != nil {
			return false, err
		}
		return true, nil
	})
}

// DeleteRecord removes the record kind/id; removing an absent one is not an
// error.
func (tx *Tx) DeleteRecord(kind, id string) error {
	if err := checkRecord(kind, id); err != nil {
		return err
	}
	return tx.delete(recordKey(kind, id))
}
