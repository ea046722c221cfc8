package protocol

import "errors"

// KVRules are the rules of kv.commit for one extension, as pure functions:
// what a batch may touch, what each emission must be, how a precondition is
// judged, and the order a batch applies in. Every host (the daemon's store
// and service, the in-memory host) judges batches through them, so their
// answers cannot differ. Make them with StoreKVRules or HostKVRules; the
// zero value's Commit refuses every batch.
type KVRules struct {
	extension string
	// emission judges an emission (or an event.accept) beyond the store's
	// own rules.
	emission func(e Emission) error
}

// StoreKVRules are the rules a store applies on its own, knowing only the
// extension's name: a batch touches only the extension's namespaces, and
// every emission names one of its sources. The store does not know the
// manifest or the configuration; a host uses HostKVRules.
func StoreKVRules(extension string) KVRules {
	r := KVRules{extension: extension}
	r.emission = r.checkSource
	return r
}

// HostKVRules are every rule a host applies to an extension's kv.commit
// batches and event.accept calls: the store's, and for each emission (in
// this order) a scope that is configured and uses the extension (inScope
// says which), its own source, a family its manifest declares, and a payload
// schema that is absent or the current version of one of its schemas.
func HostKVRules(m *Manifest, inScope func(scope string) bool) KVRules {
	r := KVRules{extension: m.Name}
	r.emission = func(e Emission) error {
		if !inScope(e.Scope) {
			return Errorf(ErrNotFound, "scope %q is not one whose configuration uses %s: emit only into the scopes that use it", e.Scope, m.Name)
		}
		if err := r.checkSource(e); err != nil {
			return err
		}
		if !m.Family(e.Type) {
			return Errorf(ErrUndeclared, "family %q is not declared by %s's manifest: declare it in provides.families", e.Type, m.Name)
		}
		return m.CheckWrite(e.Payload.Schema)
	}
	return r
}

func (r KVRules) checkSource(e Emission) error {
	if !SourceNamespace(r.extension, e.Source) {
		return Errorf(ErrUnauthorized, "source %q is not %s's: an Event's source is %s or %s/<suffix>",
			e.Source, r.extension, r.extension, r.extension)
	}
	return nil
}

// CheckNamespace refuses a KV namespace that is not the extension's: its
// name, or its name, a dot and a suffix.
func (r KVRules) CheckNamespace(ns string) error {
	if !Namespace(r.extension, ns) {
		return Errorf(ErrUnauthorized, "namespace %q is not %s's: an extension reads and writes only %s and %s.*",
			ns, r.extension, r.extension, r.extension)
	}
	return nil
}

// CheckEmission applies the rules of one Event the extension writes
// through event.accept: its bounds (an Event too large for an answer of its
// own is ErrTooLarge), then the rules of a kv.commit emission.
func (r KVRules) CheckEmission(e Emission) error {
	if err := checkEmissionBounds(-1, e); err != nil {
		return err
	}
	return r.emissionRules(e)
}

func (r KVRules) emissionRules(e Emission) error {
	if r.emission == nil {
		return r.checkSource(e)
	}
	return r.emission(e)
}

// Check applies every rule that needs no read, in the order a host answers
// them: the extension's name, then the batch's bounds (CheckBounds), then
// each emission's rules, then the namespace of every check, put and delete.
func (r KVRules) Check(p KVCommitParams) error {
	if !IsIdentifier(r.extension) {
		return Errorf(ErrInvalid, "extension name %q is not an identifier", r.extension)
	}
	if err := CheckBounds(p); err != nil {
		return err
	}
	for _, e := range p.Emissions {
		if err := r.emissionRules(e); err != nil {
			return err
		}
	}
	for _, c := range p.Checks {
		if err := r.CheckNamespace(c.Namespace); err != nil {
			return err
		}
	}
	for _, w := range p.Puts {
		if err := r.CheckNamespace(w.Namespace); err != nil {
			return err
		}
	}
	for _, d := range p.Deletes {
		if err := r.CheckNamespace(d.Namespace); err != nil {
			return err
		}
	}
	return nil
}

// CheckPrecondition judges one check against the key's current version
// (found false: absent). The empty version never matches a present key.
func CheckPrecondition(c KVCheck, version string, found bool) error {
	switch {
	case c.Absent && found:
		return Errorf(ErrConflict, "%s/%q exists; the batch required it absent: read it again and retry", c.Namespace, c.Key)
	case !c.Absent && !found:
		return Errorf(ErrConflict, "%s/%q is absent; the batch required version %s: read it again and retry", c.Namespace, c.Key, c.Version)
	case !c.Absent && version != c.Version:
		return Errorf(ErrConflict, "%s/%q changed since version %s was read: read it again and retry", c.Namespace, c.Key, c.Version)
	}
	return nil
}

// KVTx is a host's store inside one transaction, as Commit needs it. What it
// applied must be discarded when Commit returns an error.
type KVTx interface {
	// KVVersion reads a key's version; found false when it is absent.
	KVVersion(namespace, key string) (version string, found bool, err error)
	// Emit accepts one Event, named digest.EmittedEventID(e.Source,
	// e.DeliveryID).
	// When an Event of that source and delivery ID is already there, Emit
	// changes nothing and answers its ID with added false. A parent that is
	// not an accepted Event of e's scope is ErrNotFound; an Event over its
	// chain's causal bounds is ErrCausalLimit, and Emit changed nothing.
	Emit(e Emission) (eventID string, added bool, err error)
	// KVPut writes a key and returns the value's version
	// (digest.KVVersion).
	KVPut(namespace, key string, value []byte) (version string, err error)
	// KVDelete removes a key; an absent key is not an error.
	KVDelete(namespace, key string) error
}

// Commit applies one kv.commit batch through tx, all or nothing, in the one
// order: the rules (Check); then every precondition, against tx; then each
// emission in turn (an emission may name an earlier one as its parent);
// then the puts, then the deletes. Any refusal returns at once, and the
// caller must then discard tx, so nothing of the batch applies. The one
// exception: an emission over its chain's causal bounds is refused alone
// (its result says causal_limit) and the rest commits.
func (r KVRules) Commit(tx KVTx, p KVCommitParams) (KVCommitResult, error) {
	if err := r.Check(p); err != nil {
		return KVCommitResult{}, err
	}
	for _, c := range p.Checks {
		version, found, err := tx.KVVersion(c.Namespace, c.Key)
		if err != nil {
			return KVCommitResult{}, err
		}
		if err := CheckPrecondition(c, version, found); err != nil {
			return KVCommitResult{}, err
		}
	}
	var res KVCommitResult
	for _, e := range p.Emissions {
		if e.DeliveryID == "" {
			return KVCommitResult{}, Errorf(ErrInvalid, "an emission from %s needs a delivery_id: the Event's identity within its source", e.Source)
		}
		id, added, err := tx.Emit(e)
		switch {
		case errors.Is(err, ErrCausalLimit):
			res.Emissions = append(res.Emissions, EmissionResult{Refused: CodeCausalLimit})
		case err != nil:
			return KVCommitResult{}, err
		default:
			res.Emissions = append(res.Emissions, EmissionResult{EventID: id, Added: added})
		}
	}
	for _, w := range p.Puts {
		version, err := tx.KVPut(w.Namespace, w.Key, w.Value)
		if err != nil {
			return KVCommitResult{}, err
		}
		res.Versions = append(res.Versions, version)
	}
	for _, d := range p.Deletes {
		if err := tx.KVDelete(d.Namespace, d.Key); err != nil {
			return KVCommitResult{}, err
		}
	}
	return res, nil
}
