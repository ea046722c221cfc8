package pebblekv

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/open-conduit/open-conduit/protocol"
)

// KVGet reads ns/key. version is protocol.KVVersion(value); found false means
// absent. The value is the caller's.
func (r *Reader) KVGet(ns, key string) (value []byte, version string, found bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return nil, "", false, err
	}
	value, found, err = r.get(kvKey(ns, key))
	if err != nil || !found {
		return nil, "", false, err
	}
	return value, protocol.KVVersion(value), true, nil
}

// KVList lists ns's keys that start with prefix and sort after after, in key
// order, at most limit of them (limit <= 0 or over protocol.KVMaxList means
// KVMaxList). more says another page follows the last item. The items are
// the caller's.
//
// Keys sort strictly after after, as in the in-memory host: the empty key,
// which sorts before every other, is read with KVGet but never listed, so a
// page's last key is always a cursor that moves on.
func (r *Reader) KVList(ns, prefix, after string, limit int) (items []protocol.KVItem, more bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return nil, false, err
	}
	if limit <= 0 || limit > protocol.KVMaxList {
		limit = protocol.KVMaxList
	}
	lower := kvKey(ns, prefix)
	if after >= prefix {
		// The smallest key sorting after after.
		lower = append(kvKey(ns, after), 0)
	}
	upper := prefixEnd(kvKey(ns, prefix))
	if bytes.Compare(lower, upper) >= 0 {
		return []protocol.KVItem{}, false, nil
	}
	nsLen := len(kvPrefix(ns))
	items = []protocol.KVItem{}
	err = r.scan(lower, upper, func(k, v []byte) (bool, error) {
		if len(items) == limit {
			more = true
			return false, nil
		}
		items = append(items, protocol.KVItem{Key: string(k[nsLen:]), Value: clone(v), Version: protocol.KVVersion(v)})
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return items, more, nil
}

// KVPut writes ns/key. The Tx copies value.
func (tx *Tx) KVPut(ns, key string, value []byte) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	return tx.set(kvKey(ns, key), value)
}

// KVDelete removes ns/key; removing an absent key is not an error.
func (tx *Tx) KVDelete(ns, key string) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	return tx.delete(kvKey(ns, key))
}

// checkNamespace refuses the empty namespace, which no extension has.
func checkNamespace(ns string) error {
	if ns == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a KV namespace is required")
	}
	return nil
}

// CommitKV applies one kv.commit batch for extension ext in one synced
// transaction. See [Tx.CommitKV] for the rules.
func (db *DB) CommitKV(ext string, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	var res protocol.KVCommitResult
	err := db.Update(func(tx *Tx) error {
		var err error
		res, err = tx.CommitKV(ext, p, lim)
		return err
	})
	if err != nil {
		return protocol.KVCommitResult{}, err
	}
	return res, nil
}

// CommitKV applies one kv.commit batch for extension ext inside tx, so a
// caller can join it with records of its own.
//
// # Rules
//
// Every namespace of the checks, puts and deletes must be one of ext's
// (protocol.Namespace), and every emission's source one of its sources
// (protocol.SourceNamespace), else protocol.ErrUnauthorized. Every check must
// hold: the key's version equals Version, or the key is absent when Absent is
// set; else protocol.ErrConflict naming the key. Then each emission is
// accepted in order (an emission may name an earlier one as its parent), and
// then the puts and the deletes apply, in that order.
//
// # Emissions
//
// Each emission is accepted with [Tx.Accept] and lim. A duplicate answers
// {EventID, Added: false}, a new one {EventID, Added: true}. One over its
// chain's causal limits is refused alone ({Refused: "causal_limit"}) and the
// rest of the batch commits. A parent not found or in another scope is an
// error for the whole batch.
//
// # Errors
//
// On error the batch must not commit: tx may already hold part of it. Return
// the error from the Update function ([DB.CommitKV] does), and nothing
// applies. The family, schema and scope of each emission are the caller's to
// check before.
func (tx *Tx) CommitKV(ext string, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	if err := checkCommit(ext, p); err != nil {
		return protocol.KVCommitResult{}, err
	}
	for _, c := range p.Checks {
		_, version, found, err := tx.KVGet(c.Namespace, c.Key)
		if err != nil {
			return protocol.KVCommitResult{}, err
		}
		switch {
		case c.Absent && found:
			return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%q exists; the batch required it absent", c.Namespace, c.Key)
		case !c.Absent && !found:
			return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%q is absent; the batch required version %s", c.Namespace, c.Key, c.Version)
		case !c.Absent && version != c.Version:
			return protocol.KVCommitResult{}, protocol.Errorf(protocol.ErrConflict, "%s/%q changed since version %s was read", c.Namespace, c.Key, c.Version)
		}
	}
	var res protocol.KVCommitResult
	for _, e := range p.Emissions {
		ev, added, err := tx.Accept(EventInput{
			Scope: e.Scope, Source: e.Source, Type: e.Type, DeliveryID: e.DeliveryID,
			Parent: e.Parent, Payload: e.Payload,
		}, lim)
		switch {
		case errors.Is(err, protocol.ErrCausalLimit):
			res.Emissions = append(res.Emissions, protocol.EmissionResult{Refused: protocol.CodeCausalLimit})
		case err != nil:
			return protocol.KVCommitResult{}, err
		default:
			res.Emissions = append(res.Emissions, protocol.EmissionResult{EventID: ev.ID, Added: added})
		}
	}
	for _, w := range p.Puts {
		if err := tx.KVPut(w.Namespace, w.Key, w.Value); err != nil {
			return protocol.KVCommitResult{}, err
		}
		res.Versions = append(res.Versions, protocol.KVVersion(w.Value))
	}
	for _, d := range p.Deletes {
		if err := tx.KVDelete(d.Namespace, d.Key); err != nil {
			return protocol.KVCommitResult{}, err
		}
	}
	return res, nil
}

// checkCommit refuses a batch touching anything outside ext's namespaces and
// sources, before anything is read or written.
func checkCommit(ext string, p protocol.KVCommitParams) error {
	if !protocol.IsIdentifier(ext) {
		return protocol.Errorf(protocol.ErrInvalid, "extension name %q is not an identifier", ext)
	}
	own := func(ns string) error {
		if !protocol.Namespace(ext, ns) {
			return protocol.Errorf(protocol.ErrUnauthorized,
				"namespace %q is not %s's: an extension reads and writes only %s and %s.*; nothing in the batch applied", ns, ext, ext, ext)
		}
		return nil
	}
	for _, c := range p.Checks {
		if err := own(c.Namespace); err != nil {
			return err
		}
	}
	for _, w := range p.Puts {
		if err := own(w.Namespace); err != nil {
			return err
		}
	}
	for _, d := range p.Deletes {
		if err := own(d.Namespace); err != nil {
			return err
		}
	}
	for _, e := range p.Emissions {
		if !protocol.SourceNamespace(ext, e.Source) {
			return protocol.Errorf(protocol.ErrUnauthorized,
				"emission source %q is not %s's: use %s or %s/*; nothing in the batch applied", e.Source, ext, ext, ext)
		}
	}
	return nil
}

// KVLayoutVersion reads ext's recorded KV layout version from the reserved
// core.extensions namespace; recorded false means none was ever recorded.
func (r *Reader) KVLayoutVersion(ext string) (version int, recorded bool, err error) {
	if !protocol.IsIdentifier(ext) {
		return 0, false, protocol.Errorf(protocol.ErrInvalid, "extension name %q is not an identifier", ext)
	}
	v, found, err := r.get(kvLayoutKey(ext))
	if err != nil || !found {
		return 0, false, err
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, false, protocol.Errorf(protocol.ErrInternal, "the recorded KV layout of %s (%q) is unreadable", ext, v)
	}
	return n, true, nil
}

// SetKVLayoutVersion records ext's KV layout version. A version below the
// recorded one is protocol.ErrKVDowngrade: a layout once migrated is never
// recorded back.
func (tx *Tx) SetKVLayoutVersion(ext string, v int) error {
	if v < 0 {
		return protocol.Errorf(protocol.ErrInvalid, "KV layout version %d of %s is negative", v, ext)
	}
	old, recorded, err := tx.KVLayoutVersion(ext)
	if err != nil {
		return err
	}
	if recorded && v < old {
		return protocol.Errorf(protocol.ErrKVDowngrade, "%s's KV layout is recorded at version %d; version %d would downgrade it", ext, old, v)
	}
	return tx.set(kvLayoutKey(ext), []byte(strconv.Itoa(v)))
}
