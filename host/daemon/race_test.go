package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/open-conduit/open-conduit/extensions/hello"
	"github.com/open-conduit/open-conduit/host/daemon"
	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestDoctorDuringAppliesAndRestarts runs doctor, status and the extension
// views while configs are applied and packages restarted, in one process,
// so the race detector sees every reader beside every writer.
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
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			doc := d.Doctor(ctx)
			if len(doc.Checks) == 0 {
				errs <- errorf("doctor answered no checks")
			}
			_ = d.Status()
			_ = d.Extensions()
			if _, err := d.Config(); err != nil {
				errs <- err
			}
		}
	}()
	restarts.Add(1)
	go func() {
		defer restarts.Done()
		for range 4 {
			if _, err := d.Restart(ctx, hello.Name, daemontest.Deadline); err != nil {
				errs <- err
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
