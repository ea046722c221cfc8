package pebblekv

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"
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

// outcomes are the outcomes a settled execution (or a declaration) may
// name.
var outcomes = []string{protocol.OutcomeCompleted, protocol.OutcomeFailed, protocol.OutcomeWaiting, protocol.OutcomeHandoff}

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

// Keys of execution records and their indexes (see the package doc's
// table).
func execRecKey(id string) []byte { return famKey(famExecRec, id) }

func execByWorkPrefix(work string) []byte { return famKey(famExecByWork, "", work) }

func execByWorkKey(work string, attempt int, id string) []byte {
	b := binary.BigEndian.AppendUint64(execByWorkPrefix(work), uint64(attempt))
	return append(b, id...)
}

func execRunningKey(tokenHash string) []byte { return famKey(famExecRunning, tokenHash) }

// indexKeys are the index entries of x, each with its value: by Work and
// attempt, and, while running, by its token's hash.
func (x Execution) indexKeys() [][2][]byte {
	out := [][2][]byte{{execByWorkKey(x.Work, x.Attempt, x.ID), nil}}
	if x.State == ExecRunning {
		out = append(out, [2][]byte{execRunningKey(x.TokenHash), []byte(x.ID)})
	}
	return out
}

// check refuses an execution the store cannot index or answer.
func (x Execution) check() error {
	switch {
	case x.ID == "":
		return protocol.Errorf(protocol.ErrInvalid, "an execution needs an ID (NewExecutionID)")
	case x.Work == "" || x.Scope == "":
		return protocol.Errorf(protocol.ErrInvalid, "execution %s needs its Work and scope", x.ID)
	case x.Package == "" || x.Executor == "":
		return protocol.Errorf(protocol.ErrInvalid, "execution %s needs its package and executor", x.ID)
	case x.Attempt < 1:
		return protocol.Errorf(protocol.ErrInvalid, "execution %s has attempt %d; attempts count from 1", x.ID, x.Attempt)
	case x.Epoch < 1:
		return protocol.Errorf(protocol.ErrInvalid, "execution %s has lease epoch %d; epochs count from 1", x.ID, x.Epoch)
	case x.State == ExecRunning && !isHexDigest(x.TokenHash):
		return protocol.Errorf(protocol.ErrInvalid, "running execution %s needs its token's hash (TokenHash), never the token", x.ID)
	case x.State == ExecSettled && !slices.Contains(outcomes, x.Outcome):
		return protocol.Errorf(protocol.ErrInvalid, "settled execution %s has outcome %q; use completed, failed, waiting or handoff", x.ID, x.Outcome)
	case x.State != ExecRunning && x.State != ExecSettled:
		return protocol.Errorf(protocol.ErrInvalid, "execution %s has state %q; use running or settled", x.ID, x.State)
	case x.Declared != "" && !slices.Contains(outcomes, x.Declared):
		return protocol.Errorf(protocol.ErrInvalid, "execution %s declared outcome %q; use completed, failed, waiting or handoff", x.ID, x.Declared)
	case len(x.Recovery) > protocol.MaxRecoveryBytes:
		return protocol.Errorf(protocol.ErrTooLarge, "execution %s's recovery metadata is %d bytes; keep it within %d", x.ID, len(x.Recovery), protocol.MaxRecoveryBytes)
	}
	return nil
}

// checkRewrite refuses x over old, the record it replaces, when it would
// move the execution, turn its lease back or run it again.
func (x Execution) checkRewrite(old Execution) error {
	switch {
	case old.Work != x.Work || old.Scope != x.Scope || old.Attempt != x.Attempt:
		return protocol.Errorf(protocol.ErrInvalid, "execution %s is attempt %d of Work %s in scope %q; an execution never moves", x.ID, old.Attempt, old.Work, old.Scope)
	case old.Package != x.Package || old.Executor != x.Executor:
		return protocol.Errorf(protocol.ErrInvalid, "execution %s runs on executor %s of %s; an execution never changes executor", x.ID, old.Executor, old.Package)
	case x.Epoch < old.Epoch:
		return protocol.Errorf(protocol.ErrConflict, "execution %s holds lease epoch %d; epoch %d is superseded", x.ID, old.Epoch, x.Epoch)
	case old.State == ExecSettled && x.State == ExecRunning:
		return protocol.Errorf(protocol.ErrConflict, "execution %s is settled; start a new execution for another attempt", x.ID)
	}
	return nil
}

// PutExecution writes x and its indexes (by Work and attempt; running
// executions by their token's hash), removing the entries of the record
// it replaces, in tx's one batch, so RunningExecutions never lists a
// settled execution and ExecutionByTokenHash never answers a token that
// is dead. A settled execution keeps no token hash: the store drops it,
// whatever x says.
//
// # Refusals
//
// An execution without an ID, Work, scope, package or executor, with an
// attempt or epoch below 1, in an unknown state, running without a token
// hash (64 lower-case hex digits), settled without an outcome, or with
// recovery metadata over protocol.MaxRecoveryBytes (too_large), is
// protocol.ErrInvalid; so is one that changes the stored record's Work,
// scope, attempt, package or executor. One whose epoch is below the
// stored one, that runs again once settled, or whose token hash another
// running execution holds is protocol.ErrConflict. A refusal writes
// nothing.
func (tx *Tx) PutExecution(x Execution) error {
	if x.State == ExecSettled {
		x.TokenHash = ""
	}
	if err := x.check(); err != nil {
		return err
	}
	old, had, err := tx.Execution(x.ID)
	if err != nil {
		return err
	}
	if had {
		if err := x.checkRewrite(old); err != nil {
			return err
		}
	}
	if x.State == ExecRunning {
		holder, found, err := tx.get(execRunningKey(x.TokenHash))
		if err != nil {
			return err
		}
		if found && string(holder) != x.ID {
			return protocol.Errorf(protocol.ErrConflict, "execution %s's token hash is another running execution's; issue a new token (NewToken)", x.ID)
		}
	}
	raw, err := json.Marshal(x)
	if err != nil {
		return protocol.Errorf(protocol.ErrInvalid, "execution %s cannot be encoded (its recovery metadata must be valid JSON): %v", x.ID, err)
	}
	var stale [][2][]byte
	if had {
		stale = old.indexKeys()
	}
	return tx.rewrite(stale, append(x.indexKeys(), [2][]byte{execRecKey(x.ID), raw}))
}

// rewrite deletes the stale index entries, then sets the fresh ones (an
// entry in both is kept), in tx's batch.
func (tx *Tx) rewrite(stale, fresh [][2][]byte) error {
	for _, e := range stale {
		if err := tx.delete(e[0]); err != nil {
			return err
		}
	}
	for _, e := range fresh {
		if err := tx.set(e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}

// Execution reads one execution; found false means there is none.
func (r *Reader) Execution(id string) (x Execution, found bool, err error) {
	if id == "" {
		return Execution{}, false, nil
	}
	raw, found, err := r.get(execRecKey(id))
	if err != nil || !found {
		return Execution{}, false, err
	}
	x, err = decodeExecution(id, raw)
	return x, err == nil, err
}

func decodeExecution(id string, raw []byte) (Execution, error) {
	var x Execution
	if err := json.Unmarshal(raw, &x); err != nil {
		return Execution{}, fmt.Errorf("pebblekv: decode execution %s: %w", id, err)
	}
	return x, nil
}

// mustExecution reads the execution an index names; its absence is the
// store's fault, not the caller's.
func (r *Reader) mustExecution(id, index string) (Execution, error) {
	x, found, err := r.Execution(id)
	if err == nil && !found {
		err = fmt.Errorf("pebblekv: the %s index names execution %s, which does not exist", index, id)
	}
	return x, err
}

// ExecutionsOf lists a Work's executions by attempt (an attempt written
// twice, by execution ID).
func (r *Reader) ExecutionsOf(work string) ([]Execution, error) {
	prefix := execByWorkPrefix(work)
	out := []Execution{}
	err := r.scan(prefix, prefixEnd(prefix), func(k, _ []byte) (bool, error) {
		if len(k) < len(prefix)+8 {
			return false, fmt.Errorf("pebblekv: execution index key %x is malformed", k)
		}
		x, err := r.mustExecution(string(k[len(prefix)+8:]), "Work's execution")
		out = append(out, x)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RunningExecutions lists every running execution, oldest start first
// (then by ID). Only running executions are indexed, so it costs what it
// returns.
func (r *Reader) RunningExecutions() ([]Execution, error) {
	out := []Execution{}
	lower := []byte{famExecRunning}
	err := r.scan(lower, prefixEnd(lower), func(_, v []byte) (bool, error) {
		x, err := r.mustExecution(string(v), "running execution")
		out = append(out, x)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Execution) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// ExecutionByTokenHash reads the running execution whose current token
// hashes to hash (TokenHash of the bearer token): one point read. found
// false means no running execution holds it: the token is unknown, its
// execution settled, or a recovery re-issued the token.
func (r *Reader) ExecutionByTokenHash(hash string) (x Execution, found bool, err error) {
	if !isHexDigest(hash) {
		return Execution{}, false, nil
	}
	id, found, err := r.get(execRunningKey(hash))
	if err != nil || !found {
		return Execution{}, false, err
	}
	x, err = r.mustExecution(string(id), "running execution")
	return x, err == nil, err
}

// LatestExecutions reads the latest execution of each of works (its
// highest attempt; an attempt written twice, the greater execution ID),
// in works' order; a Work with none has the zero Execution (Attempt 0).
// Each costs one bounded reverse seek over that Work's execution index
// and one point read, however many attempts it had, so a page of Work
// can show its latest attempts cheaply.
func (r *Reader) LatestExecutions(works []string) ([]Execution, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	out := make([]Execution, len(works))
	if len(works) == 0 {
		return out, nil
	}
	it, err := r.src.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("pebblekv: iterate: %w", err)
	}
	ids := make([]string, len(works))
	for i, w := range works {
		prefix := execByWorkPrefix(w)
		it.SetBounds(prefix, prefixEnd(prefix))
		if !it.Last() {
			continue
		}
		k := it.Key()
		if len(k) < len(prefix)+8 {
			_ = it.Close()
			return nil, fmt.Errorf("pebblekv: execution index key %x is malformed", k)
		}
		ids[i] = string(k[len(prefix)+8:])
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("pebblekv: iterate: %w", err)
	}
	for i, id := range ids {
		if id == "" {
			continue
		}
		if out[i], err = r.mustExecution(id, "Work's execution"); err != nil {
			return nil, err
		}
	}
	return out, nil
}
