package hostsuite

import (
	"bytes"
	"slices"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// kvChecks are the checks of kv.get, kv.list and kv.commit.
var kvChecks = []check{
	{"KVGetAnswersValueAndVersion", kvGetAnswersValueAndVersion, nil},
	{"KVListPagesInKeyOrder", kvListPagesInKeyOrder, nil},
	{"KVCommitAnswersVersionsAChecksCanName", kvCommitAnswersVersions, nil},
	{"KVCommitFailedPreconditionAppliesNothing", kvCommitFailedPreconditionAppliesNothing, nil},
	{"KVCommitForeignNamespaceAppliesNothing", kvCommitForeignNamespaceAppliesNothing, nil},
	{"KVReadOfForeignNamespaceIsUnauthorized", kvReadOfForeignNamespaceIsUnauthorized, nil},
	{"KVCommitRefusedEmissionAppliesNothing", kvCommitRefusedEmissionAppliesNothing, nil},
}

func put(ns, key, value string) protocol.KVPut {
	return protocol.KVPut{Namespace: ns, Key: key, Value: []byte(value)}
}

func kvGetAnswersValueAndVersion(x *ext) {
	x.mustCommit("seed", protocol.KVCommitParams{Puts: []protocol.KVPut{put(Extension, "a", "one"), put(Extension+".x", "", "")}})
	got := x.get(Extension, "a")
	if !got.Found || string(got.Value) != "one" || got.Version != digest.KVVersion([]byte("one")) {
		x.Errorf("kv.get a = %+v, want found, \"one\", version %s", got, digest.KVVersion([]byte("one")))
	}
	// The empty key and the empty value are ordinary.
	got = x.get(Extension+".x", "")
	if !got.Found || len(got.Value) != 0 || got.Version != digest.KVVersion(nil) {
		x.Errorf("kv.get of the empty key with an empty value = %+v", got)
	}
	if got := x.get(Extension, "missing"); got.Found || got.Version != "" || got.Value != nil {
		x.Errorf("kv.get of an absent key = %+v, want not found and no version", got)
	}
}

func kvListPagesInKeyOrder(x *ext) {
	ns := Extension + ".list"
	x.mustCommit("seed", protocol.KVCommitParams{Puts: []protocol.KVPut{
		put(ns, "k3", "3"), put(ns, "k1", "1"), put(ns, "j1", "j"), put(ns, "k2", "2"), put(ns, "", "empty"),
	}})
	list := func(p protocol.KVListParams) protocol.KVListResult {
		x.Helper()
		p.Namespace = ns
		res, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.KVList, p)
		if err != nil {
			x.Fatalf("kv.list %+v: %v", p, err)
		}
		return res
	}
	keys := func(r protocol.KVListResult) []string {
		var out []string
		for _, it := range r.Items {
			out = append(out, it.Key)
			if it.Version != digest.KVVersion(it.Value) {
				x.Errorf("kv.list item %q: version %s does not match its value", it.Key, it.Version)
			}
		}
		return out
	}
	first := list(protocol.KVListParams{Prefix: "k", Limit: 2})
	if got := keys(first); !slices.Equal(got, []string{"k1", "k2"}) || !first.More {
		x.Errorf("first page = %v more %v, want [k1 k2] and more", got, first.More)
	}
	last := list(protocol.KVListParams{Prefix: "k", After: "k2", Limit: 2})
	if got := keys(last); !slices.Equal(got, []string{"k3"}) || last.More {
		x.Errorf("page after k2 = %v more %v, want [k3] and no more", got, last.More)
	}
	// The empty key is read with kv.get but never listed.
	if got := keys(list(protocol.KVListParams{})); !slices.Equal(got, []string{"j1", "k1", "k2", "k3"}) {
		x.Errorf("whole namespace = %v, want [j1 k1 k2 k3]", got)
	}
}

func kvCommitAnswersVersions(x *ext) {
	res := x.mustCommit("first", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: Extension, Key: "a", Absent: true}},
		Puts:   []protocol.KVPut{put(Extension, "a", "one"), put(Extension, "b", "")},
	})
	want := []string{digest.KVVersion([]byte("one")), digest.KVVersion(nil)}
	if !slices.Equal(res.Versions, want) || res.Emissions != nil {
		x.Fatalf("result %+v, want versions %v and no emissions", res, want)
	}
	x.mustCommit("a check naming the answered version", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: Extension, Key: "a", Version: res.Versions[0]}},
		Puts:   []protocol.KVPut{put(Extension, "a", "two")},
	})
	_, err := x.commit(protocol.KVCommitParams{Checks: []protocol.KVCheck{{Namespace: Extension, Key: "a", Version: res.Versions[0]}}})
	x.wantCode("a check naming a version since overwritten", err, protocol.ErrConflict)
	x.mustCommit("a delete, checked", protocol.KVCommitParams{
		Checks:  []protocol.KVCheck{{Namespace: Extension, Key: "a", Version: digest.KVVersion([]byte("two"))}},
		Deletes: []protocol.KVDelete{{Namespace: Extension, Key: "a"}, {Namespace: Extension, Key: "never"}},
	})
	x.mustCommit("an absence check after the delete", protocol.KVCommitParams{
		Checks: []protocol.KVCheck{{Namespace: Extension, Key: "a", Absent: true}},
	})
}

// seedBatch and goodBatch: a batch that applies on the seed, so a refusal
// is the bad part's alone.
func seedBatch() protocol.KVCommitParams {
	return protocol.KVCommitParams{Puts: []protocol.KVPut{put(Extension, "keep", "v1"), put(Extension, "old", "x")}}
}

func goodBatch() protocol.KVCommitParams {
	return protocol.KVCommitParams{
		Checks:  []protocol.KVCheck{{Namespace: Extension, Key: "keep", Version: digest.KVVersion([]byte("v1"))}},
		Puts:    []protocol.KVPut{put(Extension, "new", "n")},
		Deletes: []protocol.KVDelete{{Namespace: Extension, Key: "old"}},
	}
}

// wantUntouched requires the seed as it was: goodBatch applied nothing.
func (x *ext) wantUntouched(what string) {
	x.Helper()
	x.wantAbsent(what, Extension, "new")
	if got := x.get(Extension, "old"); !got.Found {
		x.Errorf("%s: the batch's delete applied", what)
	}
}

// wantGoodBatchApplies is each refusal's negative control: without its bad
// part, the same batch applies.
func (x *ext) wantGoodBatchApplies() {
	x.Helper()
	x.mustCommit("the batch without its bad part", goodBatch())
	if got := x.get(Extension, "new"); !bytes.Equal(got.Value, []byte("n")) {
		x.Errorf("the good batch's put did not apply: %+v", got)
	}
}

func kvCommitFailedPreconditionAppliesNothing(x *ext) {
	cases := []struct {
		name  string
		check protocol.KVCheck
	}{
		{"version changed", protocol.KVCheck{Namespace: Extension, Key: "keep", Version: digest.KVVersion([]byte("v0"))}},
		{"required absent but present", protocol.KVCheck{Namespace: Extension, Key: "keep", Absent: true}},
		{"required version but absent", protocol.KVCheck{Namespace: Extension, Key: "gone", Version: digest.KVVersion([]byte("v1"))}},
		{"empty version never matches", protocol.KVCheck{Namespace: Extension, Key: "keep"}},
		{"check on a key the batch deletes", protocol.KVCheck{Namespace: Extension, Key: "old", Absent: true}},
	}
	x.mustCommit("seed", seedBatch())
	for _, tc := range cases {
		p := goodBatch()
		p.Checks = append(p.Checks, tc.check)
		_, err := x.commit(p)
		x.wantCode(tc.name, err, protocol.ErrConflict)
		x.wantUntouched(tc.name)
	}
	x.wantGoodBatchApplies()
}

func kvCommitForeignNamespaceAppliesNothing(x *ext) {
	cases := []struct {
		name string
		bad  func(p *protocol.KVCommitParams)
	}{
		{"foreign put", func(p *protocol.KVCommitParams) { p.Puts = append(p.Puts, put("other", "k", "x")) }},
		{"foreign check", func(p *protocol.KVCommitParams) {
			p.Checks = append(p.Checks, protocol.KVCheck{Namespace: "other", Key: "k", Absent: true})
		}},
		{"foreign delete", func(p *protocol.KVCommitParams) {
			p.Deletes = append(p.Deletes, protocol.KVDelete{Namespace: "other.x", Key: "k"})
		}},
		{"lookalike prefix", func(p *protocol.KVCommitParams) { p.Puts = append(p.Puts, put(Extension+"x", "k", "x")) }},
		{"empty suffix", func(p *protocol.KVCommitParams) { p.Puts = append(p.Puts, put(Extension+".", "k", "x")) }},
		{"no namespace", func(p *protocol.KVCommitParams) { p.Puts = append(p.Puts, put("", "k", "x")) }},
	}
	x.mustCommit("seed", seedBatch())
	for _, tc := range cases {
		p := goodBatch()
		tc.bad(&p)
		_, err := x.commit(p)
		x.wantCode(tc.name, err, protocol.ErrUnauthorized)
		x.wantUntouched(tc.name)
	}
	x.wantGoodBatchApplies()
}

func kvReadOfForeignNamespaceIsUnauthorized(x *ext) {
	for _, ns := range []string{"other", Extension + "x", ""} {
		_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.KVGet, protocol.KVGetParams{Namespace: ns, Key: "k"})
		x.wantCode("kv.get in "+ns, err, protocol.ErrUnauthorized)
		_, err = jsonrpc.Invoke(x.ctx, x.conn, protocol.KVList, protocol.KVListParams{Namespace: ns})
		x.wantCode("kv.list in "+ns, err, protocol.ErrUnauthorized)
	}
	// Negative control: the extension's own namespaces read.
	x.get(Extension, "k")
	x.get(Extension+".x", "k")
}

// kvCommitRefusedEmissionAppliesNothing: a refusal met after part of the
// batch was judged (a parent that is not an accepted Event of the scope)
// still applies nothing, neither the writes nor the emissions before it.
func kvCommitRefusedEmissionAppliesNothing(x *ext) {
	elsewhere := x.mustCommit("a root in the other scope", protocol.KVCommitParams{
		Emissions: []protocol.Emission{emission(OtherScope, "elsewhere", "")},
	}).Emissions[0].EventID
	cases := []struct{ name, parent string }{
		{"parent not accepted", "ev_missing"},
		{"parent in another scope", elsewhere},
	}
	x.mustCommit("seed", seedBatch())
	for _, tc := range cases {
		p := goodBatch()
		first := emission(Scope, "first/"+tc.name, "")
		p.Emissions = []protocol.Emission{first, emission(Scope, "bad/"+tc.name, tc.parent)}
		_, err := x.commit(p)
		x.wantCode(tc.name, err, protocol.ErrNotFound)
		x.wantUntouched(tc.name)
		x.wantNew(tc.name, first)
	}
	x.wantGoodBatchApplies()
}
