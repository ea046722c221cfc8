// Package pebblekv is the daemon's one durable store: extension KV, the
// event log with its indexes, the core model's records and the reserved
// core.extensions namespace, all in one Pebble database.
//
// One logical transaction is one Pebble indexed batch. [DB.Update] runs a
// function against a [Tx] that reads its own writes and commits the batch
// synced when the function returns nil; [DB.View] reads a consistent
// snapshot. Writers are serialized by a mutex in the DB (a Pebble batch
// detects no conflicts) until Pebble has applied their batch, so every
// read-check-write inside one Update sees every earlier commit and no
// concurrent one.
//
// # Key layout
//
// Every key starts with one byte naming its family; no family's byte is a
// prefix of another's, so no key of one family can fall inside another's
// range. Strings an extension chooses (namespaces, kinds, scopes, Work IDs,
// roots) are written as uvarint(len) followed by the bytes, so the next field
// can never be mistaken for part of the string, whatever bytes it holds. seq
// is the event sequence as 8 bytes big-endian, so byte order is numeric
// order. The last field of a key may be raw: nothing follows it.
//
//	prefix  key                                      value
//	'k'     'k' len(ns) ns key                       the value's bytes (extension KV)
//	'e'     'e' seq                                  Event, JSON (the log)
//	'i'     'i' event-id                             seq (event ID index; dedupe by source and delivery)
//	's'     's' len(scope) scope seq                 empty (scope index; scope "" is "no scope")
//	'w'     'w' len(work) work seq                   empty (Work index)
//	'c'     'c' len(root) root minute                count, 8 bytes big-endian (derived Events per chain per minute)
//	'r'     'r' len(kind) kind id                    record, JSON (generic core records)
//	'W'     'W' work-id                              Work, JSON (typed record)
//	'a'     'a' len(state) state work-id             empty (Work by state)
//	'o'     'o' len(scope) scope work-id             empty (Work by scope)
//	'q'     'q' len(scope) scope len(state) state work-id   empty (Work by scope and state)
//	'y'     'y' len(scope) scope key                 work-id (the open Work holding key)
//	'h'     'h' len(scope) scope len(key) key len(kind) kind work-id   empty (Work of kind that holds key, any state)
//	'n'     'n' len(work) work n                     event-id (a Work's nth input, n from 1; WorkInputs)
//	'u'     'u' len(work) work event-id              n (the input number of an Event routed to the Work)
//	'T'     'T' timer-id                             Timer, JSON (typed record; id is "<owner>/<id>")
//	't'     't' due timer-id                         empty (timers by due time)
//	'R'     'R' event-id                             RouteDecision, JSON
//	'p'     'p' len(scope) scope seq                 empty (Events whose routing is owed)
//	'O'     'O' len(source) source len(item) item version   Observation, JSON (an observed identity bound to its envelope)
//	'X'     'X' len(source) source len(item) item version   ObservationConflict, JSON (an identity refused with another envelope)
//	'K'     'K' source                               Checkpoint, JSON (a source's last complete reconcile scan)
//	'E'     'E' execution-id                         Execution, JSON (one attempt of a Work)
//	'x'     'x' len(work) work attempt execution-id  empty (a Work's executions by attempt)
//	'g'     'g' token-hash                           execution-id (running executions, by their token's hash)
//	'V'     'V' wait-id                              Wait, JSON
//	'v'     'v' work-id                              wait-id (the Work's active Wait)
//	'd'     'd' due wait-id                          empty (active Waits by due time)
//	'P'     'P' len(package) package request-id      OpResult, JSON (an operation's committed result)
//	'A'     'A' artifact-id                          Artifact, JSON
//	'f'     'f' len(execution) execution artifact-id empty (artifacts by execution)
//	'F'     'F' len(work) work artifact-id           empty (artifacts by Work)
//	'm'     'm' "format"                             store layout version, decimal
//	'm'     'm' "seq"                                latest sequence, 8 bytes big-endian
//	'm'     'm' "id"                                 the store's identity, 32 hex digits, given at creation
//	'm'     'm' "commits"                            Updates committed, 8 bytes big-endian (written by each)
//	'm'     'm' "kvlayout" 0x00 extension            extension's KV layout version, decimal (core.extensions)
//	'm'     'm' "routecursor"                        the last sequence the router took, 8 bytes big-endian
//
// An event's ID is digest.EmittedEventID(source, delivery_id), so the ID
// index is also the (source, delivery_id) dedupe index. minute is the Unix
// minute of the derived Event's time, sign-flipped 8 bytes big-endian. due is
// a timer's or a Wait's due time as Unix seconds, sign-flipped 8 bytes
// big-endian, then its nanoseconds, 4 bytes big-endian, so byte order is
// time order. attempt in 'x' is 8 bytes big-endian.
//
// The typed records keep their indexes exact: each Put removes the entries
// of the record it replaces and writes the new ones in the same batch, so
// an index never names a state, key or due time its record no longer has.
// Only open Work (pending, running, waiting) has 'y' entries, and one key
// of a scope names at most one open Work. n in 'n' and 'u' is 8 bytes
// big-endian. A Work's record keeps only its latest inputs (WorkTail);
// 'n' keeps all of them in order and 'u' answers whether an Event already
// is one with a point read, so routing to a Work costs the same however
// many inputs it has. A record written before these indexes (every input
// in the record, no count) still reads; the first PutWork of it writes its
// inputs into them.
//
// Running Work keeps the same rule. Only a running execution has a 'g'
// entry, keyed by the hash of its current toolbelt token, so a settled
// execution's token finds nothing; the token
// itself is never stored. Only an active Wait has a 'v' entry (so a Work
// has at most one) and, when it has a due time, a 'd' entry. An operation
// result is written once per (package, request ID).
//
// The reserved core.extensions namespace is a name, not a KV namespace: its
// records live under 'm', which no extension KV key can reach, so an extension
// named core addressing core.extensions reads and writes its own 'k' keys and
// never the layout versions.
//
// # Durability
//
// Update and CommitKV return only after the batch is synced to the WAL
// (pebble.Sync), unless [Options.NoSync] is set, which only benchmarks do.
// They wait for the sync after releasing the writers' mutex, so Updates
// that commit while a sync runs share the next one (Pebble's group
// commit) instead of taking an fsync each. A batch applies entirely or not
// at all, including after a crash. On Linux each WAL file is preallocated at
// its full size ahead of its records ([SizedWALs]), so a commit's sync
// writes its data without also committing a new file size to the
// filesystem's journal; the zeros after a WAL's last record read as its end.
//
// # Faults
//
// Pebble recovers a store from its MANIFEST and WALs and stops reading
// either at the first record it cannot read, saying so only in its log; the
// store keeps that report ([DB.Recovery]) and counts its commits
// ([DB.Commits]), so a caller holding a record of an earlier count or
// MANIFEST ([Options.Committed], [Options.ManifestSynced]) can tell a
// recovery that lost acknowledged writes. A read that meets a damaged file
// is a [*DamageError] naming it, and the rest of the store still reads;
// Pebble's default would end the process. An Update that would leave less
// than the reserve free on the disk is refused with protocol.ErrStorageFull
// before Pebble sees it, since Pebble cannot go on after a WAL write fails;
// if it fails anyway, the store answers [ErrFailed] until it is opened
// again, rather than a panic or a hang. [DB.Check] reads the whole store.
//
// # Ownership
//
// Every byte slice a Reader returns is the caller's own copy, except the raw
// record ListRecords hands its callback, which is valid only during that call.
// A Tx and the Reader inside it are valid only during the function passed to
// Update or View, and neither is safe for concurrent use.
package pebblekv
