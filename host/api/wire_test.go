package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/host/wiretap"
	"github.com/open-conduit/open-conduit/protocol"
)

// wireDaemon serves one package's wire tap from a real ring and records
// the query it was asked.
type wireDaemon struct {
	Daemon
	ring *wiretap.Ring
	q    client.WireQuery
}

func (d *wireDaemon) Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error) {
	d.q = q
	if name != "notes" {
		return client.WirePage{}, protocol.Errorf(protocol.ErrNotFound, "no extension %q", name)
	}
	p := d.ring.Page(q.After, q.Limit)
	p.Extension = name
	return p, nil
}

func TestWirePagesAreBoundedByCountAndFollowTheCursor(t *testing.T) {
	d := &wireDaemon{ring: wiretap.New(wiretap.Options{})}
	for i := 1; i <= 300; i++ {
		d.ring.Observe(true, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"operation.call","id":%d,"params":{}}`, i))
	}
	for _, tc := range []struct {
		path  string
		n     int
		first uint64
		next  uint64
		more  bool
	}{
		{"/v1/extensions/notes/wire", client.MaxWirePage, 45, 300, false},
		{"/v1/extensions/notes/wire?after=100&limit=10", 10, 101, 110, true},
		{"/v1/extensions/notes/wire?after=290&limit=100000", 10, 291, 300, false},
		{"/v1/extensions/notes/wire?after=300", 0, 0, 300, false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w, _ := do(t, d, "GET", tc.path, "")
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var p client.WirePage
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) != tc.n || p.Next != tc.next || p.More != tc.more || p.Extension != "notes" {
				t.Fatalf("%d entries, next %d, more %v, extension %q; want %d, %d, %v", len(p.Entries), p.Next, p.More, p.Extension, tc.n, tc.next, tc.more)
			}
			if tc.n > 0 && (p.Entries[0].Seq != tc.first || p.Entries[0].Method != "operation.call") {
				t.Fatalf("first entry %+v; want seq %d of operation.call", p.Entries[0], tc.first)
			}
		})
	}
}

func TestWireQueryErrorsAndWaitCap(t *testing.T) {
	d := &wireDaemon{ring: wiretap.New(wiretap.Options{})}
	for _, tc := range []struct {
		path, code string
		status     int
	}{
		{"/v1/extensions/notes/wire?after=-1", protocol.CodeInvalid, http.StatusBadRequest},
		{"/v1/extensions/notes/wire?limit=x", protocol.CodeInvalid, http.StatusBadRequest},
		{"/v1/extensions/nobody/wire", protocol.CodeNotFound, http.StatusNotFound},
	} {
		w, e := do(t, d, "GET", tc.path, "")
		if w.Code != tc.status || e.Code != tc.code {
			t.Errorf("%s: status %d code %q; want %d %q", tc.path, w.Code, e.Code, tc.status, tc.code)
		}
	}
	if w, _ := do(t, d, "GET", "/v1/extensions/notes/wire?wait=3600", ""); w.Code != http.StatusOK || d.q.Wait != MaxWait {
		t.Fatalf("wait=3600: status %d, wait %s; want it capped at %s", w.Code, d.q.Wait, MaxWait)
	}
	if _, _ = do(t, d, "GET", "/v1/extensions/notes/wire?wait=2", ""); d.q.Wait != 2*time.Second {
		t.Fatalf("wait=2 passed as %s", d.q.Wait)
	}
}
