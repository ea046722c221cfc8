package pebblekv

import (
	"bytes"
	"strconv"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// KVGet reads ns/key. version is digest.KVVersion(value); found false means
// absent. The value is the caller's.
func (r *Reader) KVGet(ns, key string) (value []byte, version string, found bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return nil, "", false, err
	}
	value, found, err = r.get(kvKey(ns, key))
	if err != nil || !found {
		return nil, "", false, err
	}
	return value, digest.KVVersion(value), true, nil
}

// KVList lists ns's keys that start with prefix and sort after after, in key
// order: at most limit of them (limit <= 0 or over protocol.KVMaxList means
// KVMaxList), and, past the first, at most protocol.MaxPageBytes of them as
// kv.list encodes them (protocol.PageBudget), so the answer stays a line
// any peer reads. more says another page follows the last item. The items
// are the caller's.
//
// Keys sort strictly after after, as in the in-memory host: the empty key,
// which sorts before every other, is read with KVGet but never listed, so a
// page's last key is always a cursor that moves on.
func (r *Reader) KVList(ns, prefix, after string, limit int) (items []protocol.KVItem, more bool, err error) {
	if err := checkNamespace(ns); err != nil {
		return nil, false, err
	}
	page := protocol.NewPageBudget(limit, protocol.KVMaxList)
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
		key := string(k[nsLen:])
		if !page.Add(protocol.KVItemSize(key, len(v))) {
			more = true
			return false, nil
		}
		items = append(items, protocol.KVItem{Key: key, Value: clone(v), Version: digest.KVVersion(v)})
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
// transaction, under the store's own rules (protocol.StoreKVRules). See
// [Tx.CommitBatch].
func (db *DB) CommitKV(ext string, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	return db.CommitBatch(protocol.StoreKVRules(ext), p, lim)
}

// CommitBatch applies one kv.commit batch under rules in one synced
// transaction: all of it, or nothing. See [Tx.CommitBatch].
func (db *DB) CommitBatch(rules protocol.KVRules, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	var res protocol.KVCommitResult
	err := db.Update(func(tx *Tx) error {
		var err error
		res, err = tx.CommitBatch(rules, p, lim)
		return err
	})
	if err != nil {
		return protocol.KVCommitResult{}, err
	}
	return res, nil
}

// CommitKV applies one kv.commit batch for extension ext inside tx under the
// store's own rules (protocol.StoreKVRules: ext's namespaces and sources).
// See [Tx.CommitBatch].
func (tx *Tx) CommitKV(ext string, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	return tx.CommitBatch(protocol.StoreKVRules(ext), p, lim)
}

// CommitBatch applies one kv.commit batch inside tx under rules, so a caller
// can join it with records of its own.
//
// # Rules
//
// rules (protocol.KVRules.Commit) decide what the batch may touch, what each
// emission must be, and the order: the checks, then the emissions, then the
// puts, then the deletes. A host serving an extension passes
// protocol.HostKVRules, which also check each emission's scope, family and
// schema; protocol.StoreKVRules check only the namespaces and sources.
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
// the error from the Update function ([DB.CommitBatch] does), and nothing
// applies.
func (tx *Tx) CommitBatch(rules protocol.KVRules, p protocol.KVCommitParams, lim Limits) (protocol.KVCommitResult, error) {
	return rules.Commit(batchTx{tx: tx, lim: lim}, p)
}

// batchTx is a Tx as protocol.KVRules.Commit sees it.
type batchTx struct {
	tx  *Tx
	lim Limits
}

func (b batchTx) KVVersion(ns, key string) (string, bool, error) {
	_, version, found, err := b.tx.KVGet(ns, key)
	return version, found, err
}

func (b batchTx) Emit(e protocol.Emission) (string, bool, error) {
	ev, added, err := b.tx.Accept(EventInput{
		Scope: e.Scope, Source: e.Source, Type: e.Type, DeliveryID: e.DeliveryID,
		Parent: e.Parent, Payload: e.Payload,
	}, b.lim)
	return ev.ID, added, err
}

func (b batchTx) KVPut(ns, key string, value []byte) (string, error) {
	return digest.KVVersion(value), b.tx.KVPut(ns, key, value)
}

func (b batchTx) KVDelete(ns, key string) error { return b.tx.KVDelete(ns, key) }

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
