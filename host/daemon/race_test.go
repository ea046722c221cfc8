package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/fixtures/probe"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestDoctorDuringAppliesAndRestarts runs doctor, status, the extension
// views, logs (tail and follow), events (pages and long polls) and calls
// while configs are applied and packages restarted, in one process, so the
// race detector sees every reader beside every writer.
func TestDoctorDuringAppliesAndRestarts(t *testing.T) {
	e := daemontest.New(t, bins)
	d, err := daemon.Start(context.Background(), daemon.Options{
		StateDir:    e.State,
		ConfigFile:  e.Config,
		ConfigNamed: true,
		Served:      map[string]*protocol.Manifest{hello.Name: hello.Extension().Manifest},
		Self:        bins.OpenConduit,
		Environ:     append(os.Environ(), "OC_TEST_S1=one-7f3a", "OC_TEST_TOKEN=tok-5e8f"),
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	configs := []string{daemontest.Config, strings.Replace(daemontest.Config, `"scopes": [`, `"scopes": [
    {"id": "gamma", "entries": [{"name": "p2", "type": "probe"}]},`, 1)}
	ctx := context.Background()
	var readers, restarts sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	// fail keeps the first errors; a reader never blocks on reporting.
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	read := func(op func()) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				op()
			}
		}()
	}
	read(func() {
		if doc := d.Doctor(ctx); len(doc.Checks) == 0 {
			fail(errorf("doctor answered no checks"))
		}
		_ = d.Status()
		_ = d.Extensions()
		if _, err := d.Config(); err != nil {
			fail(err)
		}
	})
	read(func() {
		l, err := d.Log(hello.Name, 20)
		if err != nil {
			fail(err)
			return
		}
		if _, err := d.LogAfter(ctx, probe.Name, l.Offset, 10*time.Millisecond); err != nil {
			fail(err)
		}
	})
	var after uint64
	read(func() {
		page, err := d.Events(ctx, client.EventsQuery{After: after, Limit: 20, Wait: 10 * time.Millisecond})
		if err != nil {
			fail(err)
		}
		after = max(after, page.Next)
	})
	read(func() {
		// hello restarts meanwhile, so a call may find it not running, or
		// lose it mid-call; either is an answer.
		res, err := d.Call(ctx, hello.Name, client.CallRequest{Operation: "hello.greet", Scope: "beta", Input: map[string]any{"name": "ada"}})
		switch {
		case err != nil && protocol.CodeOf(err) != protocol.CodeUnavailable:
			fail(err)
		case err == nil && res.Code != "" && res.Code != protocol.CodeTransport && res.Code != protocol.CodeShuttingDown && res.Code != protocol.CodeUnavailable:
			fail(errorf("hello.greet refused " + res.Code + ": " + res.Message))
		}
	})
	restarts.Add(1)
	go func() {
		defer restarts.Done()
		for range 4 {
			if _, err := d.Restart(ctx, hello.Name, daemontest.Deadline); err != nil {
				fail(err)
			}
		}
	}()
	for i := range 8 {
		res, err := d.Apply(ctx, []byte(configs[(i+1)%2]))
		if err != nil || !res.Applied || len(res.Refused) > 0 {
			t.Fatalf("apply %d: %+v %v", i, res, err)
		}
	}
	restarts.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if data, err := os.ReadFile(e.Config); err != nil || string(data) != configs[0] {
		t.Fatalf("the last applied config is not the file: %v", err)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

func errorf(s string) error { return testError(s) }
