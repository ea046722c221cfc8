package hostsuite

import (
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/protocol/digest"
)

// emissionChecks are the checks of kv.commit emissions.
var emissionChecks = []check{
	{"EmissionIsAcceptedAsNewWithTheBatch", emissionIsAcceptedAsNew, nil},
	{"EmissionRepeatIsTheSameEventNotNew", emissionRepeatIsTheSameEvent, nil},
	{"EmissionRefusedAppliesNothing", emissionRefusedAppliesNothing, nil},
}

// source is the extension's source every good emission names.
const source = Extension + "/feed"

// emission is a good emission of the extension's family into scope, derived
// from parent when it is set.
func emission(scope, delivery, parent string) protocol.Emission {
	return protocol.Emission{
		Scope: scope, Source: source, DeliveryID: delivery, Type: Family, Parent: parent,
		Payload: protocol.Payload{Schema: Schema, Data: []byte(`{"n":1}`)},
	}
}

// id is the Event an emission of delivery is accepted as.
func id(delivery string) string { return digest.EmittedEventID(source, delivery) }

// wantNew requires e to be accepted as a new Event: proof that no earlier,
// refused batch accepted it.
func (x *ext) wantNew(what string, e protocol.Emission) {
	x.Helper()
	res := x.mustCommit(what+": emitting again", protocol.KVCommitParams{Emissions: []protocol.Emission{e}})
	want := protocol.EmissionResult{EventID: digest.EmittedEventID(e.Source, e.DeliveryID), Added: true}
	if len(res.Emissions) != 1 || res.Emissions[0] != want {
		x.Errorf("%s: emitting %s again answered %+v, want %+v: the refused batch accepted it", what, e.DeliveryID, res.Emissions, want)
	}
}

func emissionIsAcceptedAsNew(x *ext) {
	res := x.mustCommit("a root and an Event derived from it", protocol.KVCommitParams{
		Puts:      []protocol.KVPut{put(Extension, "cursor", "1")},
		Emissions: []protocol.Emission{emission(Scope, "r", ""), emission(Scope, "c", id("r")), emission(OtherScope, "o", "")},
	})
	want := []protocol.EmissionResult{{EventID: id("r"), Added: true}, {EventID: id("c"), Added: true}, {EventID: id("o"), Added: true}}
	if !slices.Equal(res.Emissions, want) {
		x.Errorf("emissions %+v, want %+v", res.Emissions, want)
	}
	if got := x.get(Extension, "cursor"); string(got.Value) != "1" {
		x.Errorf("the batch's put did not apply with its emissions: %+v", got)
	}
	// A later batch derives from an Event accepted earlier.
	res = x.mustCommit("derived from an earlier batch's Event", protocol.KVCommitParams{
		Emissions: []protocol.Emission{emission(Scope, "c2", id("c"))},
	})
	if want := []protocol.EmissionResult{{EventID: id("c2"), Added: true}}; !slices.Equal(res.Emissions, want) {
		x.Errorf("emissions %+v, want %+v", res.Emissions, want)
	}
}

func emissionRepeatIsTheSameEvent(x *ext) {
	first := emission(Scope, "d1", "")
	x.mustCommit("first", protocol.KVCommitParams{Emissions: []protocol.Emission{first}})
	changed := first
	changed.Payload.Data = []byte(`{"n":2}`)
	cases := []struct {
		name string
		e    []protocol.Emission
	}{
		{"the same emission again", []protocol.Emission{first}},
		{"another payload under the same delivery", []protocol.Emission{changed}},
		{"twice in one batch", []protocol.Emission{emission(Scope, "d2", ""), emission(Scope, "d2", "")}},
	}
	for _, tc := range cases {
		res, err := x.commit(protocol.KVCommitParams{Emissions: tc.e})
		if err != nil {
			x.Errorf("%s: %v", tc.name, err)
			continue
		}
		last := res.Emissions[len(res.Emissions)-1]
		want := protocol.EmissionResult{EventID: digest.EmittedEventID(source, tc.e[len(tc.e)-1].DeliveryID)}
		if last != want {
			x.Errorf("%s: answered %+v, want the same Event, not new: %+v", tc.name, last, want)
		}
	}
}

func emissionRefusedAppliesNothing(x *ext) {
	cases := []struct {
		name string
		bad  func(e *protocol.Emission)
		code *protocol.Error
	}{
		{"foreign source", func(e *protocol.Emission) { e.Source = "other" }, protocol.ErrUnauthorized},
		{"lookalike source", func(e *protocol.Emission) { e.Source = Extension + "x/feed" }, protocol.ErrUnauthorized},
		{"undeclared family", func(e *protocol.Emission) { e.Type = Extension + ".other" }, protocol.ErrUndeclared},
		{"another extension's family", func(e *protocol.Emission) { e.Type = "other.seen" }, protocol.ErrUndeclared},
		{"older schema version", func(e *protocol.Emission) { e.Payload.Schema = SchemaOld }, protocol.ErrUnreadableSchema},
		{"foreign schema", func(e *protocol.Emission) { e.Payload.Schema = "other.seen.v1" }, protocol.ErrUnreadableSchema},
		{"unconfigured scope", func(e *protocol.Emission) { e.Scope = Unconfigured }, protocol.ErrNotFound},
		{"no scope", func(e *protocol.Emission) { e.Scope = "" }, protocol.ErrNotFound},
		{"no delivery_id", func(e *protocol.Emission) { e.DeliveryID = "" }, protocol.ErrInvalid},
	}
	x.mustCommit("seed", seedBatch())
	for _, tc := range cases {
		good := emission(Scope, "good/"+tc.name, "")
		bad := emission(Scope, "bad/"+tc.name, "")
		tc.bad(&bad)
		p := goodBatch()
		p.Emissions = []protocol.Emission{good, bad}
		_, err := x.commit(p)
		x.wantCode(tc.name, err, tc.code)
		x.wantUntouched(tc.name)
		x.wantNew(tc.name, good)
	}
	x.wantGoodBatchApplies()
}
