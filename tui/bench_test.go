package tui

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/tui/common"
)

// benchKeys is what the operator does, over and over: move through the
// Work, open one and scroll it, look at the other panes, and type a
// filter (each keystroke narrows 10,000 rows; a backspace widens them).
var benchKeys = []tea.KeyPressMsg{
	keyPress("down"), keyPress("down"), keyPress("down"), keyPress("enter"), keyPress("down"), keyPress("esc"),
	keyPress("tab"), keyPress("down"), keyPress("tab"), keyPress("down"), keyPress("tab"), keyPress("tab"),
	keyPress("/"), keyPress("d"), keyPress("e"), keyPress("p"), {Code: tea.KeyBackspace}, keyPress("enter"),
	keyPress("down"), keyPress("down"), keyPress("/"), keyPress("esc"),
}

// BenchmarkKeyWith10000Work is the dashboard under load: 10,000 Work and
// 1,000 Waits, Events arriving at 100/s (ten long-poll answers of one
// Event between two keys of an operator pressing ten a second) and the
// Work read again after each key's worth of changes (one read in flight
// at a time). One op is one such 100 ms: its Events, its read, and a key.
// The metrics are what a key costs the operator (Update and View, the
// time before the screen answers) and what taking a read costs.
func BenchmarkKeyWith10000Work(b *testing.B) {
	m := New(context.Background(), anyDetail{newFake()}, Options{Now: func() time.Time { return epoch }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(changesMsg{ch: client.Changes{Tick: 1, Changed: true}})
	snap := benchSnapshot(10000, 1000)
	m.Update(snapshotMsg{snap: snap})
	for i, p := range m.pages {
		if p.Title() == "Work" {
			m.active = i
		}
	}
	var keys, reads []time.Duration
	var seq uint64
	b.ResetTimer()
	for i := range b.N {
		for range 10 {
			seq++
			ev := protocol.Event{Sequence: seq, Scope: "ops", Source: "webhook", Type: "github.push", Works: []string{snap.Work[seq%10000].ID}}
			m.Update(changesMsg{ch: client.Changes{Tick: 1 + seq, Changed: true, Next: seq, Latest: seq, Events: []protocol.Event{ev}}})
		}
		t0 := time.Now()
		m.Update(snapshotMsg{snap: snap})
		reads = append(reads, time.Since(t0))

		k := benchKeys[i%len(benchKeys)]
		t0 = time.Now()
		_, cmd := m.Update(k)
		_ = m.View()
		keys = append(keys, time.Since(t0))
		if k.Code == tea.KeyEnter && cmd != nil && m.pages[m.active].Title() == "Work" {
			// The detail's read, answered as the daemon would, later.
			m.Update(cmd())
		}
	}
	b.StopTimer()
	report(b, "key", keys)
	report(b, "read", reads)
}

// anyDetail is the fake answering a detail of any Work, with one running
// attempt and two artifacts.
type anyDetail struct{ *fakeAPI }

func (anyDetail) WorkDetail(_ context.Context, id string) (client.WorkDetail, error) {
	return client.WorkDetail{
		Work:       client.Work{ID: id, State: client.WorkRunning, Kind: "deploy", Attempt: 1, Executor: "shell/sh"},
		Executions: []client.Execution{{ID: "x1", Attempt: 1, Package: "shell", Executor: "sh", State: "running"}},
	}, nil
}

func (anyDetail) WorkArtifacts(_ context.Context, id string) (client.Artifacts, error) {
	return client.Artifacts{Work: id, Artifacts: []client.Artifact{{Name: "log.txt", Size: 4096, Execution: "x1"}, {Name: "report.json", Size: 120, Execution: "x1"}}}, nil
}

// report adds the p50, p99 and max of ds in milliseconds as metrics.
func report(b *testing.B, what string, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-"+what+"-ms")
	b.ReportMetric(ms(ds[len(ds)*99/100]), "p99-"+what+"-ms")
	b.ReportMetric(ms(ds[len(ds)-1]), "max-"+what+"-ms")
}

// benchSnapshot is work Work newest first (some running, with attempts
// and requesters) and waits Waits.
func benchSnapshot(work, waits int) common.Snapshot {
	s := common.Snapshot{WorkPages: (work + client.MaxWorkPage - 1) / client.MaxWorkPage}
	s.Extensions = client.Extensions{Extensions: newFake().exts}
	for i := work; i >= 1; i-- {
		w := client.Work{ID: fmt.Sprintf("W%06d", i), Scope: "ops", Kind: "deploy", State: client.WorkStates[i%len(client.WorkStates)],
			Display: &client.Display{Title: fmt.Sprintf("deploy build %d of the website", i), Requester: fmt.Sprintf("user%d", i%37)},
			Created: epoch.Add(-time.Duration(i) * time.Minute)}
		if i%3 == 0 {
			w.Attempt, w.Executor = 1+i%4, "shell/sh"
		}
		s.Work = append(s.Work, w)
	}
	for i := range waits {
		s.Waits = append(s.Waits, client.Wait{ID: fmt.Sprintf("T%06d", i), Work: fmt.Sprintf("W%06d", i+1), Owner: "github",
			Description: fmt.Sprintf("approval of PR %d", i), Progress: "1 of 2 approvals", Due: epoch.Add(time.Duration(i) * time.Minute)})
	}
	return s
}
