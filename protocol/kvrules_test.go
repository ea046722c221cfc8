package protocol

import (
	"fmt"
	"slices"
	"testing"
)

func rulesManifest() *Manifest {
	return &Manifest{Name: "acme", Protocol: []int{1}, Command: []string{"acme-extension"},
		Provides: Provides{
			Families: []Family{{Name: "acme.seen", Rederivable: true}},
			Schemas:  []Schema{{Base: "acme.seen", Versions: []int{1, 2}}},
		}}
}

func goodEmission(delivery string) Emission {
	return Emission{Scope: "s1", Source: "acme/feed", DeliveryID: delivery, Type: "acme.seen", Payload: Payload{Schema: "acme.seen.v2"}}
}

// TestKVRulesCheckRefusesInTheHostsOrder: with several faults in one batch,
// the first rule in the documented order answers.
func TestKVRulesCheckRefusesInTheHostsOrder(t *testing.T) {
	host := HostKVRules(rulesManifest(), func(s string) bool { return s == "s1" })
	foreignPut := []KVPut{{Namespace: "other", Key: "k"}}
	with := func(f func(*Emission)) []Emission {
		e := goodEmission("d")
		f(&e)
		return []Emission{goodEmission("ok"), e}
	}
	cases := []struct {
		name  string
		rules KVRules
		p     KVCommitParams
		want  *Error
	}{
		{"a good batch", host, KVCommitParams{Emissions: with(func(*Emission) {}), Puts: []KVPut{{Namespace: "acme.x"}}}, nil},
		{"scope before namespace", host, KVCommitParams{Emissions: with(func(e *Emission) { e.Scope = "s9" }), Puts: foreignPut}, ErrNotFound},
		{"source before family", host, KVCommitParams{Emissions: with(func(e *Emission) { e.Source, e.Type = "other", "other.x" })}, ErrUnauthorized},
		{"family before schema", host, KVCommitParams{Emissions: with(func(e *Emission) { e.Type, e.Payload.Schema = "acme.x", "acme.seen.v1" })}, ErrUndeclared},
		{"schema before namespace", host, KVCommitParams{Emissions: with(func(e *Emission) { e.Payload.Schema = "acme.seen.v1" }), Puts: foreignPut}, ErrUnreadableSchema},
		{"a foreign check", host, KVCommitParams{Checks: []KVCheck{{Namespace: "acmex", Key: "k"}}}, ErrUnauthorized},
		{"a foreign delete", host, KVCommitParams{Deletes: []KVDelete{{Namespace: "acme.", Key: "k"}}}, ErrUnauthorized},
		{"the store's rules know no family", StoreKVRules("acme"), KVCommitParams{Emissions: with(func(e *Emission) { e.Type, e.Scope = "acme.x", "s9" })}, nil},
		{"but do know the sources", StoreKVRules("acme"), KVCommitParams{Emissions: with(func(e *Emission) { e.Source = "acmex" })}, ErrUnauthorized},
		{"an extension name that is no identifier", StoreKVRules("Acme"), KVCommitParams{}, ErrInvalid},
		{"the zero rules", KVRules{}, KVCommitParams{}, ErrInvalid},
	}
	for _, tc := range cases {
		err := tc.rules.Check(tc.p)
		if tc.want == nil && err != nil || tc.want != nil && CodeOf(err) != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCheckPrecondition(t *testing.T) {
	v1 := testVersion([]byte("v1"))
	cases := []struct {
		name     string
		c        KVCheck
		version  string
		found    bool
		conflict bool
	}{
		{"version holds", KVCheck{Namespace: "acme", Key: "k", Version: v1}, v1, true, false},
		{"absent holds", KVCheck{Namespace: "acme", Key: "k", Absent: true}, "", false, false},
		{"version changed", KVCheck{Namespace: "acme", Key: "k", Version: v1}, testVersion(nil), true, true},
		{"present, absence required", KVCheck{Namespace: "acme", Key: "k", Absent: true}, v1, true, true},
		{"absent, version required", KVCheck{Namespace: "acme", Key: "k", Version: v1}, "", false, true},
		{"the empty version never matches", KVCheck{Namespace: "acme", Key: "k"}, v1, true, true},
	}
	for _, tc := range cases {
		err := CheckPrecondition(tc.c, tc.version, tc.found)
		if got := CodeOf(err) == CodeConflict; got != tc.conflict || (err != nil && !tc.conflict) {
			t.Errorf("%s: %v, conflict want %v", tc.name, err, tc.conflict)
		}
	}
}

// logTx is a KVTx that logs what Commit asks of it, in order.
type logTx struct {
	log      []string
	versions map[string]string
	emitErr  map[string]error
}

func (l *logTx) KVVersion(ns, key string) (string, bool, error) {
	l.log = append(l.log, "read "+ns+"/"+key)
	v, ok := l.versions[ns+"/"+key]
	return v, ok, nil
}

func (l *logTx) Emit(e Emission) (string, bool, error) {
	l.log = append(l.log, "emit "+e.DeliveryID)
	if err := l.emitErr[e.DeliveryID]; err != nil {
		return "", false, err
	}
	return testEventID(e.Source, e.DeliveryID), true, nil
}

func (l *logTx) KVPut(ns, key string, value []byte) (string, error) {
	l.log = append(l.log, "put "+ns+"/"+key)
	return testVersion(value), nil
}

// testVersion and testEventID stand in for a store's versions and Event
// ids (package digest, which imports this one): Commit only passes them
// on, so any stable names do.
func testVersion(value []byte) string { return "v:" + string(value) }

func testEventID(source, deliveryID string) string { return "ev_" + source + "/" + deliveryID }

func (l *logTx) KVDelete(ns, key string) error {
	l.log = append(l.log, "delete "+ns+"/"+key)
	return nil
}

// TestKVRulesCommitAppliesInOneOrder: checks, then emissions, then puts,
// then deletes; a refusal stops the batch where it is met; a causal refusal
// is the emission's alone.
func TestKVRulesCommitAppliesInOneOrder(t *testing.T) {
	rules := HostKVRules(rulesManifest(), func(s string) bool { return s == "s1" })
	v := testVersion([]byte("v"))
	batch := KVCommitParams{
		Deletes:   []KVDelete{{Namespace: "acme", Key: "d"}},
		Puts:      []KVPut{{Namespace: "acme", Key: "p", Value: []byte("x")}},
		Emissions: []Emission{goodEmission("e1"), goodEmission("e2")},
		Checks:    []KVCheck{{Namespace: "acme", Key: "c", Version: v}},
	}
	cases := []struct {
		name     string
		versions map[string]string
		emitErr  map[string]error
		p        func(KVCommitParams) KVCommitParams
		want     []string
		code     string
		result   []EmissionResult
	}{
		{name: "in order", versions: map[string]string{"acme/c": v},
			want:   []string{"read acme/c", "emit e1", "emit e2", "put acme/p", "delete acme/d"},
			result: []EmissionResult{{EventID: testEventID("acme/feed", "e1"), Added: true}, {EventID: testEventID("acme/feed", "e2"), Added: true}}},
		{name: "a failed check stops before any emission", want: []string{"read acme/c"}, code: CodeConflict},
		{name: "a refused emission stops before the writes", versions: map[string]string{"acme/c": v},
			emitErr: map[string]error{"e1": Errorf(ErrNotFound, "no parent")},
			want:    []string{"read acme/c", "emit e1"}, code: CodeNotFound},
		{name: "a causal refusal is the emission's alone", versions: map[string]string{"acme/c": v},
			emitErr: map[string]error{"e1": Errorf(ErrCausalLimit, "too deep")},
			want:    []string{"read acme/c", "emit e1", "emit e2", "put acme/p", "delete acme/d"},
			result:  []EmissionResult{{Refused: CodeCausalLimit}, {EventID: testEventID("acme/feed", "e2"), Added: true}}},
		{name: "no delivery_id is refused before the store sees it", versions: map[string]string{"acme/c": v},
			p: func(p KVCommitParams) KVCommitParams {
				p.Emissions = []Emission{goodEmission("e1"), goodEmission("")}
				return p
			},
			want: []string{"read acme/c", "emit e1"}, code: CodeInvalid},
		{name: "a rule refuses before anything is read",
			p: func(p KVCommitParams) KVCommitParams {
				p.Puts = append(slices.Clone(p.Puts), KVPut{Namespace: "other", Key: "k"})
				return p
			},
			want: nil, code: CodeUnauthorized},
	}
	for _, tc := range cases {
		tx := &logTx{versions: tc.versions, emitErr: tc.emitErr}
		p := batch
		if tc.p != nil {
			p = tc.p(p)
		}
		res, err := rules.Commit(tx, p)
		if CodeOf(err) != tc.code {
			t.Errorf("%s: error %v, want code %q", tc.name, err, tc.code)
		}
		if !slices.Equal(tx.log, tc.want) {
			t.Errorf("%s: applied %q, want %q", tc.name, tx.log, tc.want)
		}
		if err == nil && (!slices.Equal(res.Emissions, tc.result) || fmt.Sprint(res.Versions) != fmt.Sprint([]string{testVersion([]byte("x"))})) {
			t.Errorf("%s: result %+v", tc.name, res)
		}
	}
}
