package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/session"
)

// probeDir is the probe extension laid out as a package, built once.
var probeDir string

// testRoot holds the packages the tests lay out; TestMain removes it.
var testRoot string

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "oc-service-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	testRoot = root
	probeDir = filepath.Join(root, probe.Name)
	if err := layout(probeDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(root)
	os.Exit(code)
}

func layout(dir string) error {
	return layoutPackage(dir, "probe-extension", "github.com/open-conduit/open-conduit/fixtures/probe/cmd/probe-extension", probe.Extension().Manifest)
}

// layoutPackage builds the command cmd into dir as exe, beside m.
func layoutPackage(dir, exe, cmd string, m *protocol.Manifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, exe), cmd)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build (the tests need the go command): %w", err)
	}
	data, err := m.MarshalIndent()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, protocol.ManifestFile), data, 0o644)
}

// scopes builds a config of n scopes where only "mine" uses the probe.
func scopes(n int) *config.Config {
	c := &config.Config{Scopes: []config.Scope{{ID: "mine", Entries: []config.Entry{{Name: "p", Type: probe.Name}}}}}
	for i := 1; i < n; i++ {
		c.Scopes = append(c.Scopes, config.Scope{ID: fmt.Sprintf("other%03d", i)})
	}
	return c
}

type harness struct {
	db *pebblekv.DB
	s  *session.Session
}

// start runs the probe through a session against a service on db.
func start(tb testing.TB, db *pebblekv.DB, cfg *config.Config) *harness {
	tb.Helper()
	m := probe.Extension().Manifest
	gen := &config.Generation{Config: cfg, Dir: tb.TempDir()}
	svc := service.New(m, service.Deps{DB: db, Generation: func() *config.Generation { return gen }})
	s, err := session.Start(context.Background(), session.Package{Dir: probeDir, Manifest: m}, session.Options{Host: svc.Table()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close(context.Background()) })
	return &harness{db: db, s: s}
}

func (h *harness) op(tb testing.TB, operation string, in any, out any) {
	tb.Helper()
	data, _ := json.Marshal(in)
	var res protocol.OperationCallResult
	if err := h.s.Call(context.Background(), protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: operation, Input: protocol.Payload{Data: data}, Authority: protocol.Authority{Scope: "mine"},
	}, &res); err != nil {
		tb.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(res.Output.Data, out); err != nil {
			tb.Fatal(err)
		}
	}
}

func openDB(tb testing.TB, dir string, noSync bool) *pebblekv.DB {
	tb.Helper()
	db, err := pebblekv.Open(dir, &pebblekv.Options{NoSync: noSync})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// BenchmarkKVCommitFromExtension is kv.commit round trips made by the
// extension, each synced before it is answered; commits/s is b.N over the
// time the extension measured.
func BenchmarkKVCommitFromExtension(b *testing.B) {
	db := openDB(b, b.TempDir(), false)
	defer db.Close()
	h := start(b, db, scopes(1))
	var t probe.Timing
	h.op(b, "probe.repeat", probe.Repeat{Method: "kv.commit", N: 20,
		Params: `{"puts":[{"namespace":"probe.bench","key":"w{i}","value":"dmFsdWU="}]}`}, &t)
	b.ResetTimer()
	h.op(b, "probe.repeat", probe.Repeat{Method: "kv.commit", N: b.N,
		Params: `{"puts":[{"namespace":"probe.bench","key":"k{i}","value":"dmFsdWU="}]}`}, &t)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/(float64(t.Nanos)/1e9), "commits/s")
}

// BenchmarkEventAcceptFromExtension is derived Events accepted through
// event.accept, each synced, from the extension.
func BenchmarkEventAcceptFromExtension(b *testing.B) {
	db := openDB(b, b.TempDir(), false)
	defer db.Close()
	var root pebblekv.Event
	if err := db.Update(func(tx *pebblekv.Tx) error {
		var err error
		root, _, err = tx.Accept(pebblekv.EventInput{Scope: "mine", Source: "probe", Type: "probe.seen", DeliveryID: "root",
			Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)}}, pebblekv.Limits{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	h := start(b, db, scopes(1))
	var t probe.Timing
	params := fmt.Sprintf(`{"scope_id":"mine","source":"probe","delivery_id":"d{i}","type":"probe.seen","parent":%q,"payload":{"schema":"probe.seen.v1","data":{}}}`, root.ID)
	b.ResetTimer()
	h.op(b, "probe.repeat", probe.Repeat{Method: "event.accept", N: b.N, Params: params}, &t)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/(float64(t.Nanos)/1e9), "events/s")
}

// BenchmarkStateEvents reads state.events for an extension that owns 1% of
// the log, through the wire, as the log grows tenfold.
func BenchmarkStateEvents(b *testing.B) {
	for _, size := range []int{100_000, 1_000_000} {
		if size > 100_000 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprintf("log=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			build := openDB(b, dir, true)
			fill(b, build, size)
			build.Close()
			db := openDB(b, dir, false)
			defer db.Close()
			h := start(b, db, scopes(100))
			var page protocol.StateEventsResult
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var a probe.Answer
				h.op(b, "probe.call", probe.Call{Method: "state.events", Params: jsontext.Value(`{"limit":1000}`)}, &a)
				if a.Code != "" {
					b.Fatal(a.Message)
				}
				if err := json.Unmarshal(a.Result, &page); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(page.Events) != 1000 || page.Events[0].Scope != "mine" {
				b.Fatalf("page of %d events", len(page.Events))
			}
		})
	}
}

// fill writes n Events across 100 scopes, 1% of them in "mine".
func fill(tb testing.TB, db *pebblekv.DB, n int) {
	tb.Helper()
	const batch = 5000
	for start := 0; start < n; start += batch {
		err := db.Update(func(tx *pebblekv.Tx) error {
			for i := start; i < min(start+batch, n); i++ {
				scope := fmt.Sprintf("other%03d", 1+i%99)
				if i%100 == 0 {
					scope = "mine"
				}
				if _, _, err := tx.Accept(pebblekv.EventInput{Scope: scope, Source: "probe", Type: "probe.seen",
					DeliveryID: fmt.Sprintf("e%d", i), Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{"n":1}`)}}, pebblekv.Limits{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}
