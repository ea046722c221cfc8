package hostsuite

import (
	"bytes"
	"maps"
	"slices"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
)

// stateChecks are the checks of the state reads, event.accept and
// secret.resolve.
var stateChecks = []check{
	{"StateScopesAreTheExtensionsWithItsEntries", stateScopes, nil},
	{"StateEventsAreOnlyTheExtensionsScopesPaged", stateEvents, nil},
	{"EventAcceptOnlyDerivesWithRecordsOnlyWhenNew", eventAccept, nil},
	{"SecretResolveAnswersOnlyWhatItsEntriesSelect", secretResolve, nil},
}

// same reports whether a and b encode alike.
func same(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func stateScopes(x *ext) {
	want := map[string]protocol.ScopeView{}
	for _, e := range x.setup.Entries {
		v := want[e.Scope]
		v.ID = e.Scope
		v.Entries = append(v.Entries, protocol.Entry{Scope: e.Scope, Type: e.Type, Name: e.Name, Config: e.Config, Connection: e.Connection})
		want[e.Scope] = v
	}
	all, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateScopes, struct{}{})
	if err != nil {
		x.Fatalf("state.scopes: %v", err)
	}
	ordered := make([]protocol.ScopeView, 0, len(want))
	for _, id := range slices.Sorted(maps.Keys(want)) {
		ordered = append(ordered, want[id])
	}
	if !same(all.Scopes, ordered) {
		x.Errorf("state.scopes = %+v, want %+v: the scopes with the extension's entries, by id, each with its entries", all.Scopes, ordered)
	}
	one, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateScope, protocol.StateScopeParams{ID: Scope})
	if err != nil || !same(one, want[Scope]) {
		x.Errorf("state.scope %s = %+v, %v; want %+v", Scope, one, err, want[Scope])
	}
	for _, id := range []string{Unconfigured, ""} {
		_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateScope, protocol.StateScopeParams{ID: id})
		x.wantCode("state.scope of "+id, err, protocol.ErrNotFound)
	}
}

// events reads one page of state.events.
func (x *ext) events(p protocol.StateEventsParams) protocol.StateEventsResult {
	x.Helper()
	res, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateEvents, p)
	if err != nil {
		x.Fatalf("state.events %+v: %v", p, err)
	}
	return res
}

func ids(es []protocol.Event) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func stateEvents(x *ext) {
	seq, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateSequence, struct{}{})
	if err != nil || seq.Sequence != uint64(len(x.setup.Events)) {
		x.Errorf("state.sequence = %+v, %v; want %d: every Event in the log counts, in any scope", seq, err, len(x.setup.Events))
	}
	x.mustCommit("two Events", protocol.KVCommitParams{Emissions: []protocol.Emission{emission(OtherScope, "o", ""), emission(Scope, "r", "")}})
	cases := []struct {
		name string
		p    protocol.StateEventsParams
		want []string
		more bool
	}{
		{"every scope of the extension", protocol.StateEventsParams{}, []string{SeenID, id("o"), id("r")}, false},
		{"one scope", protocol.StateEventsParams{Scope: Scope}, []string{SeenID, id("r")}, false},
		{"a scope that does not use it", protocol.StateEventsParams{Scope: Unconfigured}, []string{}, false},
		{"a page of one", protocol.StateEventsParams{Limit: 1}, []string{SeenID}, true},
	}
	for _, tc := range cases {
		res := x.events(tc.p)
		if got := ids(res.Events); !slices.Equal(got, tc.want) || res.More != tc.more {
			x.Errorf("%s: %v more %v, want %v more %v", tc.name, got, res.More, tc.want, tc.more)
		}
		if n := len(res.Events); n > 0 && res.Next != res.Events[n-1].Sequence {
			x.Errorf("%s: next %d is not the last Event's sequence %d", tc.name, res.Next, res.Events[n-1].Sequence)
		}
	}
	first := x.events(protocol.StateEventsParams{Limit: 1})
	if rest := x.events(protocol.StateEventsParams{After: first.Next}); !slices.Equal(ids(rest.Events), []string{id("o"), id("r")}) || rest.More {
		x.Errorf("after the first page: %v more %v, want the other two and no more", ids(rest.Events), rest.More)
	}
	ev, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateEvent, protocol.StateEventParams{ID: id("r")})
	if err != nil || ev.Scope != Scope || ev.Root != id("r") || ev.Type != Family || ev.DeliveryID != "r" || ev.Source != source {
		x.Errorf("state.event %s = %+v, %v", id("r"), ev, err)
	}
	for _, missing := range []string{ForeignID, "ev_missing", ""} {
		_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateEvent, protocol.StateEventParams{ID: missing})
		x.wantCode("state.event "+missing, err, protocol.ErrNotFound)
	}
	work, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateWorkEvents, protocol.StateWorkEventsParams{ID: "w1"})
	if err != nil || work.Events == nil || len(work.Events) != 0 || work.More {
		x.Errorf("state.work_events of a Work with no Events = %+v, %v; want an empty page", work, err)
	}
}

// accept sends one event.accept.
func (x *ext) accept(p protocol.EventAcceptParams) (protocol.EventAcceptResult, error) {
	return jsonrpc.Invoke(x.ctx, x.conn, protocol.EventAccept, p)
}

// derived is an event.accept of the extension's family from parent, with
// records that put key.
func derived(delivery, parent, key string) protocol.EventAcceptParams {
	return protocol.EventAcceptParams{
		Scope: Scope, Source: source, DeliveryID: delivery, Type: Family, Parent: parent,
		Payload: protocol.Payload{Schema: Schema, Data: []byte(`{"n":2}`)},
		Records: &protocol.KVCommitParams{Puts: []protocol.KVPut{put(Extension, key, "r")}},
	}
}

func eventAccept(x *ext) {
	res, err := x.accept(derived("d1", SeenID, "rec1"))
	if err != nil || !res.Added || res.Event.ID != id("d1") || res.Event.Parent != SeenID || res.Event.Root != SeenID || res.Event.Depth != 1 {
		x.Fatalf("deriving from a seeded root: %+v, %v", res, err)
	}
	if got := x.get(Extension, "rec1"); !got.Found {
		x.Errorf("the new Event's records did not commit with it")
	}
	again, err := x.accept(derived("d1", SeenID, "rec2"))
	if err != nil || again.Added || again.Event.ID != id("d1") {
		x.Errorf("the same delivery again: %+v, %v; want the same Event, not added", again, err)
	}
	x.wantAbsent("a repeat's records", Extension, "rec2")
	emitting := derived("d-emits", SeenID, "rec3")
	emitting.Records.Emissions = []protocol.Emission{emission(Scope, "inner", "")}
	foreignNS := derived("d-foreign", SeenID, "rec4")
	foreignNS.Records.Puts = append(foreignNS.Records.Puts, put("other", "k", "x"))
	cases := []struct {
		name string
		edit func(p *protocol.EventAcceptParams)
		p    protocol.EventAcceptParams
		code *protocol.Error
	}{
		{"a root", nil, derived("d-root", "", "rec5"), protocol.ErrInvalid},
		{"no delivery_id", nil, derived("", SeenID, "rec6"), protocol.ErrInvalid},
		{"a parent in another scope", func(p *protocol.EventAcceptParams) { p.Scope = OtherScope }, derived("d-other", SeenID, "rec7"), protocol.ErrNotFound},
		{"a parent never accepted", nil, derived("d-missing", "ev_missing", "rec8"), protocol.ErrNotFound},
		{"a scope that does not use it", func(p *protocol.EventAcceptParams) { p.Scope = Unconfigured }, derived("d-foreign-scope", ForeignID, "rec9"), protocol.ErrNotFound},
		{"an undeclared family", func(p *protocol.EventAcceptParams) { p.Type = "other.seen" }, derived("d-family", SeenID, "rec10"), protocol.ErrUndeclared},
		{"records with emissions", nil, emitting, protocol.ErrInvalid},
		{"records in a foreign namespace", nil, foreignNS, protocol.ErrUnauthorized},
	}
	for _, tc := range cases {
		if tc.edit != nil {
			tc.edit(&tc.p)
		}
		_, err := x.accept(tc.p)
		x.wantCode(tc.name, err, tc.code)
		x.wantAbsent(tc.name+": its records", Extension, tc.p.Records.Puts[0].Key)
		if tc.p.DeliveryID != "" {
			_, err := jsonrpc.Invoke(x.ctx, x.conn, protocol.StateEvent, protocol.StateEventParams{ID: id(tc.p.DeliveryID)})
			x.wantCode(tc.name+": the refused Event", err, protocol.ErrNotFound)
		}
	}
}

func secretResolve(x *ext) {
	resolve := func(p protocol.SecretResolveParams) (protocol.SecretResolveResult, error) {
		return jsonrpc.Invoke(x.ctx, x.conn, protocol.SecretResolve, p)
	}
	want := map[string]string{TokenName: Token}
	for _, names := range [][]string{nil, {TokenName}} {
		res, err := resolve(protocol.SecretResolveParams{Scope: Scope, Names: names})
		if err != nil || !maps.Equal(res.Secrets, want) {
			x.Errorf("secret.resolve %v in %s = %+v, %v; want %v", names, Scope, res, err, want)
		}
	}
	res, err := resolve(protocol.SecretResolveParams{Scope: OtherScope})
	if err != nil || res.Secrets == nil || len(res.Secrets) != 0 {
		x.Errorf("secret.resolve in %s, where its entry selects none = %+v, %v; want none", OtherScope, res, err)
	}
	cases := []struct {
		name string
		p    protocol.SecretResolveParams
	}{
		{"a secret its entries do not select", protocol.SecretResolveParams{Scope: Scope, Names: []string{"unselected"}}},
		{"a scope that does not use it", protocol.SecretResolveParams{Scope: Unconfigured}},
		{"no scope", protocol.SecretResolveParams{}},
		{"a connection not configured", protocol.SecretResolveParams{Scope: Scope, Connection: "nope"}},
	}
	for _, tc := range cases {
		res, err := resolve(tc.p)
		x.wantCode(tc.name, err, protocol.ErrUnauthorized)
		if len(res.Secrets) > 0 {
			x.Errorf("%s: answered secrets with its refusal", tc.name)
		}
	}
}
