// Package notes is a small team notebook, the package that exercises every
// surface the engine serves: an entry of type notes takes notes in over a
// webhook (POST {"id", "thread", "text"} to /notes/<scope>/<entry>, with a
// bearer token when the entry names a connection or selects a secret), each
// one a notes.added Event; its route handler notes gathers a thread's notes
// into one Work of kind notes.thread whose trigger is the first urgent note
// (text starting with "!"); an entry's digest_every arms a recurring timer
// whose notes.digest Events become run-once digest Work; the operations
// notes.write and notes.read keep notes in its KV, and the task
// notes-compact keeps a per-thread summary of them.
//
// It ships as three releases whose KV layouts differ, so an upgrade
// migrates: release 1 keeps a note's text as plain bytes, release 2 as a
// JSON record naming its thread, release 3 under its thread's key with an
// index by id. Release(n) builds each; Extension is release 3, the one
// the open-conduit binary serves (open-conduit extension-run notes). It is
// built only on the SDK.
package notes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// Names the package declares.
const (
	// Name is the package's name, its entry type's and its route handler's.
	Name = "notes"
	// Added is the family of a note taken in; AddedSchema its payload's.
	Added       = "notes.added"
	AddedSchema = "notes.added.v1"
	// Digest is the family of a digest timer's firing; DigestSchema its
	// payload's. It is also the digest timers' recurrence kind and the
	// digest Work's kind.
	Digest       = "notes.digest"
	DigestSchema = "notes.digest.v1"
	// ThreadKind is the Work kind of one thread, chosen a trigger by its
	// first urgent note.
	ThreadKind = "notes.thread"
	// Write and Read are the operations.
	Write = "notes.write"
	Read  = "notes.read"
	// CompactTask keeps the per-thread summaries current.
	CompactTask = "notes-compact"
	// ConnectionType is the connection type whose token guards an entry's
	// webhook; TokenSecret is its secret's name, and the name of the scope
	// secret an entry may select instead.
	ConnectionType = "notes-token"
	TokenSecret    = "token"
	// KeyPrefix prefixes a thread's correlation key.
	KeyPrefix = "notes:"
	// DigestKeyPrefix prefixes a digest occurrence's correlation key.
	DigestKeyPrefix = "notes-digest:"
)

// KV namespaces.
const (
	// Store holds the notes, in the layout of the running release.
	Store = "notes"
	// Meta holds the layout the notes are in and a migration's cursor.
	Meta = "notes.meta"
	// Threads holds, by thread, its Summary (the compact task's).
	Threads = "notes.threads"
	// Armed holds, by timer id, the interval each armed digest runs at.
	Armed = "notes.armed"
)

// CompactEvery is how often the compact task runs.
const CompactEvery = 10 * time.Minute

// MinDigestEvery is the shortest digest interval an entry may ask for.
const MinDigestEvery = time.Minute

// Config is a notes entry's config.
type Config struct {
	DigestEvery string `json:"digest_every,omitempty" doc:"How often a digest of the entry fires, a Go duration of at least 1m (e.g. 24h); without it no digest fires. Release 3 and later."`
}

// Extension builds release 3, the one the open-conduit binary serves.
func Extension() *sdk.Extension { return Release(3) }

// Release builds release n of the package (1, 2 or 3): each is a valid
// package of its own, with the KV layout of its number. Any other n
// panics.
func Release(n int) *sdk.Extension {
	if n < 1 || n > 3 {
		panic(fmt.Sprintf("notes: Release(%d): the releases are 1, 2 and 3", n))
	}
	reg := &registry{}
	s := store{layout: n}
	x := sdk.New(Name, sdk.Version(fmt.Sprintf("%d.0.0", n)), sdk.KVVersion(n), sdk.HostRun(),
		sdk.Title("Notes"), sdk.Summary("a team notebook: notes in by webhook or operation, one Work per thread"),
		sdk.Certification(Certification)).
		EntryType(Name, sdk.EntryConfig[Config]()).
		Family(Added, sdk.Loss("a note the daemon did not answer 2xx is lost unless the sender posts it again")).
		Schema(Added, 1).
		Configure(reg.configure(n)).
		Validate(validate(n)).
		Webhook(reg.handle).
		Push(push).
		Render(render).
		Operation(Write, sdk.Handler(s.write), sdk.Describe("write a note on a thread; answers its id")).
		Operation(Read, sdk.Handler(s.read), sdk.Describe("read a thread's notes, oldest first"))
	if n >= 2 {
		x.Migrate(migrate)
	}
	if n >= 3 {
		x.Family(Digest, sdk.Loss("digests due while the daemon was down fire once when it is back, not once each")).
			Schema(Digest, 1).
			Recurrence(Digest, next).
			Task(CompactTask, CompactEvery, compact).
			RouteHandler(Name, match, sdk.Samples(samples)).
			WorkKind(sdk.WorkKind{Kind: ThreadKind}, sdk.Trigger(trigger)).
			// A digest is owed once per occurrence: run-once keeps a
			// re-fired occurrence (its key) from making a second digest
			// Work even after the first is done, which a timed kind would
			// not.
			WorkKind(sdk.WorkKind{Kind: Digest, RunOnce: true})
	}
	p := &x.Manifest.Provides
	for i := range p.Extensions {
		if p.Extensions[i].Type == Name {
			p.Extensions[i].Ingress, p.Extensions[i].Families = true, []string{Added}
		}
	}
	p.Connections = append(p.Connections, protocol.ConnectionType{Type: ConnectionType, Fields: []protocol.Field{
		{Name: TokenSecret, Secret: true, Required: true, Help: "The bearer token senders put in Authorization."},
	}})
	return x
}

// entry is one configured notes entry.
type entry struct {
	sdk.Entry
	config Config
	path   string // the registered path, /notes/<scope>/<entry>
	source string // the source name, notes/<scope>/<entry>
}

// registry is the current generation's entries, by path.
type registry struct {
	mu     sync.Mutex
	byPath map[string]entry
}

// configure registers each entry's webhook path and source, and from
// release 3 on arms or cancels the entries' digest timers.
func (reg *registry) configure(release int) sdk.ConfigureFunc {
	return func(ctx context.Context, r *sdk.Request, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
		byPath := map[string]entry{}
		var res sdk.ConfigureResult
		for _, en := range p.Entries {
			c, err := sdk.DecodeEntry[Config](en)
			if err != nil {
				return sdk.ConfigureResult{}, err
			}
			id := en.Scope + "/" + en.Name
			e := entry{Entry: en, config: c, path: "/" + Name + "/" + id, source: Name + "/" + id}
			byPath[e.path] = e
			res.WebhookPaths = append(res.WebhookPaths, e.path)
			res.Sources = append(res.Sources, protocol.Source{Name: e.source, Families: []string{Added}})
		}
		if release >= 3 {
			if err := armDigests(ctx, r.Host, p); err != nil {
				return sdk.ConfigureResult{}, err
			}
		}
		reg.mu.Lock()
		reg.byPath = byPath
		reg.mu.Unlock()
		return res, nil
	}
}

// lookup finds the entry whose path is p or a parent of p.
func (reg *registry) lookup(p string) (entry, bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for path, e := range reg.byPath {
		if p == path || len(p) > len(path) && p[:len(path)+1] == path+"/" {
			return e, true
		}
	}
	return entry{}, false
}

// validate checks an entry's digest interval, and that a route on the
// handler has no config. Releases before 3 accept digest_every with a
// warning that they ignore it, so one config serves every release.
func validate(release int) sdk.ValidateFunc {
	return func(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
		switch p.Kind {
		case sdk.ValidateExtension:
			c, err := sdk.DecodeEntry[Config](sdk.Entry{Scope: p.Scope, Type: p.Type, Name: p.Name, Config: p.Config})
			if err != nil {
				return sdk.ValidateResult{}, err
			}
			if c.DigestEvery == "" {
				return sdk.ValidateResult{}, nil
			}
			if _, err := digestEvery(p.Name, c.DigestEvery); err != nil {
				return sdk.ValidateResult{}, err
			}
			if release < 3 {
				return sdk.ValidateResult{Warnings: []string{fmt.Sprintf(
					"notes entry %q: digest_every is ignored by notes %d.0.0; digests fire from release 3.0.0", p.Name, release)}}, nil
			}
		case sdk.ValidateRoute:
			if len(p.Config) > 0 && string(p.Config) != "{}" && string(p.Config) != "null" {
				return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid, "a route on the notes handler takes no config: remove it")
			}
		}
		return sdk.ValidateResult{}, nil
	}
}

// digestEvery parses an entry's digest interval, refusing one that is not
// a duration or is shorter than MinDigestEvery.
func digestEvery(entry, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, sdk.Errorf(sdk.ErrInvalid, "notes entry %q: digest_every is not a Go duration: write it like 24h or 90m", entry)
	case d < MinDigestEvery:
		return 0, sdk.Errorf(sdk.ErrInvalid, "notes entry %q: digest_every %s is shorter than %s: make it at least %s", entry, d, MinDigestEvery, MinDigestEvery)
	}
	return d, nil
}
