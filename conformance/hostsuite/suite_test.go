package hostsuite_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/memhost"
)

// memHost is a faithful host: the in-memory one.
func memHost(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	h := hostsuite.MemHost(tb, s)
	return hostsuite.Served{Table: h.Table(), Gate: h.Gate}
}

// withCommit is the in-memory host with its kv.commit handler replaced by
// wrap's.
func withCommit(wrap func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc) hostsuite.Host {
	return withHandler(protocol.MethodKVCommit, wrap)
}

// withHandler is the in-memory host with one method's handler replaced by
// wrap's.
func withHandler(method string, wrap func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc) hostsuite.Host {
	return hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
		return rewire(s, memHost(tb, s), func(name string, fn jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
			if name == method {
				return wrap(fn)
			}
			return fn
		})
	})
}

// rewire is served with each handler replaced by what edit makes of it,
// and none where edit answers nil; its gate judges by the new table.
func rewire(s hostsuite.Setup, served hostsuite.Served, edit func(name string, fn jsonrpc.HandlerFunc) jsonrpc.HandlerFunc) hostsuite.Served {
	t := jsonrpc.NewTable()
	for _, name := range served.Table.Methods() {
		fn, _ := served.Table.Lookup(name)
		if fn = edit(name, fn); fn != nil {
			t.HandleRaw(name, fn)
		}
	}
	return hostsuite.Served{Table: t, Gate: func(_ context.Context, method string) error {
		return protocol.CheckCallback(s.Manifest, method, t.Has, false)
	}}
}

func decodeBatch(raw jsontext.Value) protocol.KVCommitParams {
	var p protocol.KVCommitParams
	_ = json.Unmarshal(raw, &p)
	return p
}

func encode(p protocol.KVCommitParams) jsontext.Value { return encodeAny(p) }

func encodeAny(v any) jsontext.Value {
	b, _ := json.Marshal(v)
	return b
}

// partialHost applies a batch's puts in a batch of their own before the
// rest, so a refusal leaves them behind.
var partialHost = withCommit(func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
	return func(ctx context.Context, raw jsontext.Value) (any, error) {
		p := decodeBatch(raw)
		var own protocol.KVCommitParams
		for _, w := range p.Puts {
			if protocol.Namespace(hostsuite.Extension, w.Namespace) {
				own.Puts = append(own.Puts, w)
			}
		}
		if len(own.Puts) > 0 {
			_, _ = base(ctx, encode(own))
		}
		return base(ctx, raw)
	}
})

// namespaceBlindHost drops what a batch says about other namespaces instead
// of refusing it.
var namespaceBlindHost = withCommit(func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
	return func(ctx context.Context, raw jsontext.Value) (any, error) {
		p := decodeBatch(raw)
		own := func(ns string) bool { return protocol.Namespace(hostsuite.Extension, ns) }
		p.Checks = slices.DeleteFunc(p.Checks, func(c protocol.KVCheck) bool { return !own(c.Namespace) })
		p.Puts = slices.DeleteFunc(p.Puts, func(w protocol.KVPut) bool { return !own(w.Namespace) })
		p.Deletes = slices.DeleteFunc(p.Deletes, func(d protocol.KVDelete) bool { return !own(d.Namespace) })
		return base(ctx, encode(p))
	}
})

// countOnlyListHost pages kv.list by count alone: it joins the pages the
// faithful host answers until the count is reached.
var countOnlyListHost = withHandler(protocol.MethodKVList, func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
	return func(ctx context.Context, raw jsontext.Value) (any, error) {
		var p protocol.KVListParams
		_ = json.Unmarshal(raw, &p)
		var all protocol.KVListResult
		for {
			out, err := base(ctx, encodeAny(p))
			if err != nil {
				return nil, err
			}
			page := out.(protocol.KVListResult)
			all.Items, all.More = append(all.Items, page.Items...), page.More
			if !page.More || len(all.Items) >= protocol.KVMaxList {
				return all, nil
			}
			p.After = page.Items[len(page.Items)-1].Key
		}
	}
})

// unboundedWritesHost refuses nothing for its size: it cuts what is over a
// bound down to it and applies the batch.
var unboundedWritesHost = withCommit(func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
	return func(ctx context.Context, raw jsontext.Value) (any, error) {
		p := decodeBatch(raw)
		for i, w := range p.Puts {
			p.Puts[i].Key = w.Key[:min(len(w.Key), protocol.MaxKeyBytes)]
			p.Puts[i].Value = w.Value[:min(len(w.Value), protocol.MaxValueBytes)]
		}
		for i, e := range p.Emissions {
			if protocol.PayloadSize(e.Payload) > protocol.MaxPayloadBytes {
				p.Emissions[i].Payload.Data = jsontext.Value(`"cut"`)
			}
		}
		return base(ctx, encode(p))
	}
})

// everyScopeHost treats an unconfigured scope as configured.
var everyScopeHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	h := hostsuite.MemHost(tb, s, memhost.WithScopes(hostsuite.Unconfigured))
	return hostsuite.Served{Table: h.Table(), Gate: h.Gate}
})

// enabledOnlyGateHost gates callbacks as the in-memory test host once did:
// undeclared for anything the manifest does not enable, and no unsupported.
var enabledOnlyGateHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	served := memHost(tb, s)
	served.Gate = func(_ context.Context, method string) error {
		if !s.Manifest.Enabled(method) {
			return protocol.Errorf(protocol.ErrUndeclared, "%s is not enabled by %s's manifest", method, s.Manifest.Name)
		}
		return nil
	}
	return served
})

// extraMethodHost also serves state.timers, which the daemon answers
// unsupported, with an empty page.
var extraMethodHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	served := memHost(tb, s)
	t := jsonrpc.NewTable()
	for _, name := range served.Table.Methods() {
		fn, _ := served.Table.Lookup(name)
		t.HandleRaw(name, fn)
	}
	t.HandleRaw(protocol.MethodStateTimers, func(context.Context, jsontext.Value) (any, error) { return map[string]any{}, nil })
	return hostsuite.Served{Table: t, Gate: func(_ context.Context, method string) error {
		return protocol.CheckCallback(s.Manifest, method, t.Has, false)
	}}
})

// noStateEventsHost does not serve state.events.
var noStateEventsHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	return rewire(s, memHost(tb, s), func(name string, fn jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		if name == protocol.MethodStateEvents {
			return nil
		}
		return fn
	})
})

// everythingEnabledHost gates as if the manifest enabled every method.
var everythingEnabledHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	served := memHost(tb, s)
	served.Gate = func(_ context.Context, method string) error {
		return protocol.CheckCallback(hostsuite.Maximal(), method, served.Table.Has, false)
	}
	return served
})

// rootAcceptingHost accepts a root Event through event.accept.
var rootAcceptingHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	h := hostsuite.MemHost(tb, s)
	return rewire(s, hostsuite.Served{Table: h.Table(), Gate: h.Gate}, func(name string, fn jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		if name != protocol.MethodEventAccept {
			return fn
		}
		return func(ctx context.Context, raw jsontext.Value) (any, error) {
			var p protocol.EventAcceptParams
			_ = json.Unmarshal(raw, &p)
			if p.Parent != "" {
				return fn(ctx, raw)
			}
			ev, added, err := h.Accept(protocol.Emission{Scope: p.Scope, Source: p.Source, DeliveryID: p.DeliveryID, Type: p.Type, Payload: p.Payload})
			return protocol.EventAcceptResult{Event: ev, Added: added}, err
		}
	})
})

// repeatRecordsHost commits an event.accept's records even when the Event
// is a repeat.
var repeatRecordsHost = hostsuite.HostFunc(func(tb testing.TB, s hostsuite.Setup) hostsuite.Served {
	served := memHost(tb, s)
	commit, _ := served.Table.Lookup(protocol.MethodKVCommit)
	return rewire(s, served, func(name string, fn jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
		if name != protocol.MethodEventAccept {
			return fn
		}
		return func(ctx context.Context, raw jsontext.Value) (any, error) {
			out, err := fn(ctx, raw)
			var p protocol.EventAcceptParams
			_ = json.Unmarshal(raw, &p)
			if res, ok := out.(protocol.EventAcceptResult); ok && err == nil && !res.Added && p.Records != nil {
				_, _ = commit(ctx, encode(*p.Records))
			}
			return out, err
		}
	})
})

// anyScopeSecretsHost answers a refused scope's secret.resolve with the
// secrets of the scope that has them.
var anyScopeSecretsHost = withHandler(protocol.MethodSecretResolve, func(base jsonrpc.HandlerFunc) jsonrpc.HandlerFunc {
	return func(ctx context.Context, raw jsontext.Value) (any, error) {
		out, err := base(ctx, raw)
		if err == nil {
			return out, nil
		}
		var p protocol.SecretResolveParams
		_ = json.Unmarshal(raw, &p)
		p.Scope = hostsuite.Scope
		return base(ctx, encodeAny(p))
	}
})

// TestWeakenedHostsFailTheSuite is the suite's negative control: each
// deliberately weakened host fails the checks of what it weakened, and the
// faithful host it is built from fails none.
func TestWeakenedHostsFailTheSuite(t *testing.T) {
	cases := []struct {
		name     string
		host     hostsuite.Host
		mustFail []string
	}{
		{"a batch applied partially", partialHost, []string{
			"KVCommitFailedPreconditionAppliesNothing", "KVCommitForeignNamespaceAppliesNothing",
			"KVCommitRefusedEmissionAppliesNothing", "EmissionRefusedAppliesNothing",
		}},
		{"the namespace check skipped", namespaceBlindHost, []string{"KVCommitForeignNamespaceAppliesNothing"}},
		{"an unconfigured scope accepted", everyScopeHost, []string{
			"EmissionRefusedAppliesNothing", "StateScopesAreTheExtensionsWithItsEntries", "StateEventsAreOnlyTheExtensionsScopesPaged",
		}},
		{"a method the daemon does not serve served", extraMethodHost, []string{"EveryMethodAnswersAsTheCatalogueSays"}},
		{"a served method not served", noStateEventsHost, []string{
			"EveryMethodAnswersAsTheCatalogueSays", "StateEventsAreOnlyTheExtensionsScopesPaged",
		}},
		{"methods the manifest does not enable served", everythingEnabledHost, []string{"MethodsNotEnabledAreUndeclared"}},
		{"a root accepted by event.accept", rootAcceptingHost, []string{"EventAcceptOnlyDerivesWithRecordsOnlyWhenNew"}},
		{"a repeat's records committed", repeatRecordsHost, []string{"EventAcceptOnlyDerivesWithRecordsOnlyWhenNew"}},
		{"secrets resolved in any scope", anyScopeSecretsHost, []string{"SecretResolveAnswersOnlyWhatItsEntriesSelect"}},
		{"unsupported answered undeclared or method_not_found", enabledOnlyGateHost, []string{"CallbackAnswersBeforeAnyHandler"}},
		{"kv.list paged by count alone", countOnlyListHost, []string{"KVListPagesByBytes"}},
		{"writes over their bounds cut and applied", unboundedWritesHost, []string{"KVCommitOverItsBoundsIsTooLargeAndAppliesNothing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			failed := hostsuite.Failures(t, tc.host)
			for _, name := range tc.mustFail {
				if _, ok := failed[name]; !ok {
					t.Errorf("check %s passed against a host with %s; it must fail (failed: %v)", name, tc.name, keys(failed))
				}
			}
		})
	}
	if failed := hostsuite.Failures(t, hostsuite.HostFunc(memHost)); len(failed) > 0 {
		t.Fatalf("the faithful host fails the suite: %v", failed)
	}
}

func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestSuiteManifestIsValid: the extension every check runs as is one a host
// would start.
func TestSuiteManifestIsValid(t *testing.T) {
	m := hostsuite.Manifest()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !m.Family(hostsuite.Family) || m.Enabled(protocol.MethodWorkCancel) || m.Enabled(protocol.MethodProbeList) {
		t.Fatal("the callback checks need a family, no work kinds and no probes permission")
	}
}
