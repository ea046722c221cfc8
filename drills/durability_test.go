package drills

import (
	"fmt"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/internal/daemontest"
	"github.com/open-conduit/open-conduit/protocol"
)

// TestDrillKill9AfterAcknowledgedWrites kills the daemon right after a kv.commit and an
// event.accept were answered, and checks on restart that both are there.
func TestDrillKill9AfterAcknowledgedWrites(t *testing.T) {
	iterations := scale(20, 200)
	e := daemontest.New(t, bins)
	e.Start()
	root := e.HostCall("", "kv.commit", protocol.KVCommitParams{Emissions: []protocol.Emission{{
		Scope: "alpha", Source: "probe", DeliveryID: "root", Type: "probe.seen",
		Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
	}}})
	var rootRes protocol.KVCommitResult
	if root.Code != "" || json.Unmarshal(root.Result, &rootRes) != nil || len(rootRes.Emissions) != 1 {
		t.Fatalf("root: %+v", root)
	}
	parent := rootRes.Emissions[0].EventID
	losses := 0
	for i := 0; i < iterations; i++ {
		key := fmt.Sprintf("k%03d", i)
		if a := e.HostCall("", "kv.commit", protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.dur", Key: key, Value: []byte(key)}}}); a.Code != "" {
			t.Fatalf("commit %d: %+v", i, a)
		}
		acc := e.HostCall("", "event.accept", protocol.EventAcceptParams{
			Scope: "alpha", Source: "probe", DeliveryID: "derived-" + key, Type: "probe.seen", Parent: parent,
			Payload: protocol.Payload{Schema: "probe.seen.v1", Data: jsontext.Value(`{}`)},
			Records: &protocol.KVCommitParams{Puts: []protocol.KVPut{{Namespace: "probe.rec", Key: key, Value: []byte("r")}}},
		})
		var accRes protocol.EventAcceptResult
		if acc.Code != "" || json.Unmarshal(acc.Result, &accRes) != nil || !accRes.Added {
			t.Fatalf("accept %d: %+v", i, acc)
		}
		e.Kill()
		e.Start()
		if v, ok := e.KVGet("probe.dur", key); !ok || v != key {
			losses++
			t.Errorf("iteration %d: the acknowledged kv.commit is gone", i)
		}
		if _, ok := e.KVGet("probe.rec", key); !ok {
			losses++
			t.Errorf("iteration %d: the acknowledged event.accept's record is gone", i)
		}
		if a := e.HostCall("", "state.event", protocol.StateEventParams{ID: accRes.Event.ID}); a.Code != "" {
			losses++
			t.Errorf("iteration %d: the acknowledged event is gone: %+v", i, a)
		}
	}
	report(t, "kill -9 after acknowledged writes: %d iterations, %d acknowledged kv.commit and %d event.accept, %d lost", iterations, iterations, iterations, losses)
}
