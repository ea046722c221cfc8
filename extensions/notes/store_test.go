package notes_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/extensions/notes"
	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// write calls notes.write with a fixed request ID, as the daemon does on
// a retry.
func write(t *testing.T, h *sdktest.Harness, requestID, thread, text string) notes.WriteOutput {
	t.Helper()
	in, _ := json.Marshal(notes.WriteInput{Thread: thread, Text: text})
	var res protocol.OperationCallResult
	err := h.Raw(context.Background(), protocol.MethodOperationCall, protocol.OperationCallParams{
		Operation: notes.Write, Input: protocol.Payload{Data: in}, RequestID: requestID}, &res)
	if err != nil {
		t.Fatalf("notes.write %s: %v", thread, err)
	}
	var out notes.WriteOutput
	if err := json.Unmarshal(res.Output.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// read is a thread's notes as notes.read answers them.
func read(t *testing.T, h *sdktest.Harness, thread string) []notes.Entry {
	t.Helper()
	out, err := sdktest.Call[notes.ReadOutput](context.Background(), h, notes.Read, notes.ReadInput{Thread: thread})
	if err != nil {
		t.Fatalf("notes.read %s: %v", thread, err)
	}
	return out.Notes
}

// texts is each note's id=text.
func texts(es []notes.Entry) string {
	var b []string
	for _, e := range es {
		b = append(b, e.ID+"="+e.Text)
	}
	return strings.Join(b, " ")
}

func TestWriteThenReadInEachReleasesLayout(t *testing.T) {
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("release %d", n), func(t *testing.T) {
			h := sdktest.New(t, notes.Release(n))
			a1 := write(t, h, "r1", "plans", "first")
			write(t, h, "r2", "other", "elsewhere")
			a2 := write(t, h, "r3", "plans", `{"looks":"like JSON"}`)
			if again := write(t, h, "r1", "plans", "first"); again.ID != a1.ID {
				t.Fatalf("a retried write answered id %s, want %s", again.ID, a1.ID)
			}
			if got, want := texts(read(t, h, "plans")), a1.ID+"=first "+a2.ID+`={"looks":"like JSON"}`; got != want {
				t.Fatalf("plans reads %q, want %q (the retry stored once)", got, want)
			}
			if got := read(t, h, "nobody"); len(got) != 0 {
				t.Fatalf("an unwritten thread reads %+v", got)
			}
			kv := h.KV(notes.Store)
			switch n {
			case 1:
				if string(kv["note/"+a1.ID]) != "first" {
					t.Fatalf("layout 1 keeps %q, want the plain text", kv["note/"+a1.ID])
				}
			case 2:
				var r notes.Record2
				if json.Unmarshal(kv["note/"+a1.ID], &r) != nil || r.Thread != "plans" || r.Text != "first" || r.At.IsZero() {
					t.Fatalf("layout 2 keeps %s, want a record naming its thread", kv["note/"+a1.ID])
				}
			case 3:
				if string(kv["note/"+a1.ID]) != "thread/plans/00000001" || kv["thread/plans/00000002"] == nil || string(kv["seq/plans"]) != "2" {
					t.Fatalf("layout 3 keys %v", slicesKeys(kv))
				}
			}
			for _, bad := range []notes.WriteInput{{Thread: "a/b", Text: "x"}, {Thread: "", Text: "x"}, {Thread: "t", Text: strings.Repeat("x", notes.MaxText+1)}} {
				if _, err := sdktest.Call[notes.WriteOutput](context.Background(), h, notes.Write, bad); !errors.Is(err, protocol.ErrInvalid) {
					t.Errorf("write %q: %v, want invalid", bad.Thread, err)
				}
			}
		})
	}
}

func slicesKeys(m map[string][]byte) []string {
	var out []string
	for k := range maps.Keys(m) {
		out = append(out, k)
	}
	return out
}

func TestCompactKeepsEachThreadsSummaryAndASecondPassWritesNothing(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, notes.Extension())
	write(t, h, "r1", "plans", "first")
	last := write(t, h, "r2", "plans", "second\nline two")
	write(t, h, "r3", "other", "x")
	if err := h.RunTask(ctx, notes.CompactTask); err != nil {
		t.Fatal(err)
	}
	var s notes.Summary
	if err := json.Unmarshal(h.KV(notes.Threads)["plans"], &s); err != nil || s.Count != 2 || s.LastID != last.ID || s.Last != "second" {
		t.Fatalf("plans' summary %+v (%v), want 2 notes, the last %s", s, err, last.ID)
	}
	commits, before := len(h.Commits()), h.KV(notes.Threads)
	if err := h.RunTask(ctx, notes.CompactTask); err != nil {
		t.Fatal(err)
	}
	if len(h.Commits()) != commits || !maps.EqualFunc(before, h.KV(notes.Threads), func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("a second pass over the same notes committed %d batches", len(h.Commits())-commits)
	}
	write(t, h, "r4", "other", "y")
	if err := h.RunTask(ctx, notes.CompactTask); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(h.KV(notes.Threads)["other"], &s); err != nil || s.Count != 2 || s.Last != "y" {
		t.Fatalf("other's summary after a new note %+v, want 2 notes ending y", s)
	}
}
