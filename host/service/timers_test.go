package service_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-conduit/open-conduit/conformance/hostsuite"
	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/host/service"
	"github.com/open-conduit/open-conduit/jsonrpc"
	"github.com/open-conduit/open-conduit/pebblekv"
	"github.com/open-conduit/open-conduit/protocol"
)

// connectService serves svc to an extension over two OS pipes, behind the
// session's callback rules, and answers the extension's side.
func connectService(t *testing.T, m *protocol.Manifest, svc *service.Service) *jsonrpc.Conn {
	t.Helper()
	hostR, extW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	table := svc.Table()
	host := jsonrpc.New(hostR, hostW, jsonrpc.Options{Peer: "extension " + m.Name, Handlers: table,
		Gate: func(_ context.Context, method string) error {
			return protocol.CheckCallback(m, method, table.Has, false)
		}})
	conn := jsonrpc.New(extR, extW, jsonrpc.Options{Peer: "host"})
	t.Cleanup(func() {
		_ = conn.Close()
		_ = host.Close()
	})
	return conn
}

// TestTimerCancelReachesOnlyItsOwnTimers: two extensions arm the same id
// on one store; each cancel removes its own timer alone, each arm and
// cancel that changed something wakes the scheduler, and the stored timer
// is named under its owner.
func TestTimerCancelReachesOnlyItsOwnTimers(t *testing.T) {
	db := openDB(t, t.TempDir(), true)
	t.Cleanup(func() { db.Close() })
	gen := &config.Generation{ID: 1, Config: &config.Config{Scopes: []config.Scope{{
		ID:      hostsuite.Scope,
		Entries: []config.Entry{{Name: "a", Type: hostsuite.EntryType}, {Name: "b", Type: "bravo-feed"}},
	}}}}
	acme := hostsuite.TimerSetup().Manifest
	bravo := &protocol.Manifest{Name: "bravo", Protocol: acme.Protocol, Command: []string{"bravo-extension"}, Provides: protocol.Provides{
		Extensions:  []protocol.ExtensionType{{Type: "bravo-feed"}},
		Families:    []protocol.Family{{Name: "bravo.tick"}},
		Recurrences: []protocol.Recurrence{{Kind: "bravo.daily"}},
	}}
	var wakes atomic.Int64
	deps := service.Deps{DB: db, Generation: func() *config.Generation { return gen }, TimersChanged: func() { wakes.Add(1) }}
	a := connectService(t, acme, service.New(acme, deps))
	b := connectService(t, bravo, service.New(bravo, deps))
	ctx := context.Background()
	due := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	arms := []struct {
		conn *jsonrpc.Conn
		p    protocol.TimerArmParams
	}{
		{a, protocol.TimerArmParams{ID: "x", Scope: hostsuite.Scope, Due: due, Family: hostsuite.Family}},
		{b, protocol.TimerArmParams{ID: "x", Scope: hostsuite.Scope, Due: due, Family: "bravo.tick"}},
	}
	for _, arm := range arms {
		if _, err := jsonrpc.Invoke(ctx, arm.conn, protocol.TimerArm, arm.p); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := jsonrpc.Invoke(ctx, a, protocol.TimerCancel, protocol.TimerCancelParams{ID: "x"}); err != nil || !res.Cancelled {
		t.Fatalf("acme cancels its x: %+v %v", res, err)
	}
	if res, err := jsonrpc.Invoke(ctx, a, protocol.TimerCancel, protocol.TimerCancelParams{ID: "x"}); err != nil || res.Cancelled {
		t.Fatalf("acme cancels x again (bravo's is there): %+v %v, want cancelled false", res, err)
	}
	var left []pebblekv.Timer
	_ = db.View(func(r *pebblekv.Reader) error {
		left, _, _ = r.Timers(pebblekv.TimerQuery{})
		return nil
	})
	if len(left) != 1 || left[0].ID != "bravo/x" || left[0].Owner != "bravo" {
		t.Fatalf("timers left %+v, want bravo's x alone", left)
	}
	if got := wakes.Load(); got != 3 {
		t.Fatalf("the scheduler was woken %d times, want 3 (two arms, one cancel that removed a timer)", got)
	}
}
