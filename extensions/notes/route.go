package notes

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
)

// DigestData is a digest firing's payload: which entry, and the occurrence
// it is.
type DigestData struct {
	Entry       string    `json:"entry"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// match routes a notes.added Event to its thread's Work and a notes.digest
// Event to the run-once Work of its occurrence. It reads nothing but its
// params, so it is free of side effects.
func match(_ context.Context, _ *sdk.Request, p sdk.RouteMatchParams) (sdk.RouteMatchResult, error) {
	switch p.Event.Type {
	case Added:
		var n Note
		if err := json.Unmarshal(p.Event.Payload.Data, &n); err != nil || checkThread(n.Thread) != nil {
			return sdk.RouteMatchResult{Reason: "the " + Added + " Event names no thread"}, nil
		}
		return sdk.RouteMatchResult{
			Match: true, Reason: "a note on thread " + n.Thread, Kind: ThreadKind,
			Keys: []string{KeyPrefix + n.Thread},
			// No ref: the count of a thread's notes is the Work's input
			// count, which route.match is not shown for a Work its keys
			// reach, and a guess would be written over the display.
			Display: &sdk.Display{Title: n.Thread},
		}, nil
	case Digest:
		var d DigestData
		if err := json.Unmarshal(p.Event.Payload.Data, &d); err != nil || d.Entry == "" || d.ScheduledAt.IsZero() {
			return sdk.RouteMatchResult{Reason: "the " + Digest + " Event does not name its entry and occurrence"}, nil
		}
		at := d.ScheduledAt.UTC()
		return sdk.RouteMatchResult{
			Match: true, Reason: fmt.Sprintf("the digest of entry %s due at %s", d.Entry, at.Format(time.RFC3339)), Kind: Digest,
			Keys:    []string{DigestKeyPrefix + d.Entry + "@" + at.Format(time.RFC3339)},
			Display: &sdk.Display{Title: "digest of " + d.Entry, Ref: at.Format("2006-01-02 15:04")},
		}, nil
	}
	return sdk.RouteMatchResult{Reason: "notes matches only " + Added + " and " + Digest + " Events"}, nil
}

// samples offers a note on a thread and a digest due at the host's now,
// so a trace shows what each becomes.
func samples(_ context.Context, _ *sdk.Request, p sdk.RouteSamplesParams) ([]sdk.RouteSample, error) {
	note, err := json.Marshal(Note{ID: "sample-1", Thread: "release", Text: "!the build is red"})
	if err != nil {
		return nil, err
	}
	digest, err := json.Marshal(DigestData{Entry: "sample", ScheduledAt: p.Now.UTC().Truncate(time.Second)})
	if err != nil {
		return nil, err
	}
	return []sdk.RouteSample{
		{ID: "note", Title: "an urgent note on thread release",
			Event: sdk.SampleEvent{Type: Added, Payload: sdk.Payload{Schema: AddedSchema, Data: note}}},
		{ID: "digest", Title: "the digest of entry sample, due now",
			Event: sdk.SampleEvent{Type: Digest, Payload: sdk.Payload{Schema: DigestSchema, Data: digest}}},
	}, nil
}

// trigger picks a new thread Work's trigger: its first urgent note (text
// starting with "!"), else its first input. It is pure and calls nothing.
func trigger(_ context.Context, _ *sdk.Request, p sdk.WorkKindTriggerParams) (string, error) {
	for _, ev := range p.Inputs {
		var n Note
		if json.Unmarshal(ev.Payload.Data, &n) == nil && strings.HasPrefix(n.Text, "!") {
			return ev.ID, nil
		}
	}
	if len(p.Inputs) == 0 {
		return "", nil
	}
	return p.Inputs[0].ID, nil
}

// next is recurrence.next for notes.digest: the rule is the entry's
// interval (a JSON string such as "24h0m0s"), the next occurrence that
// interval after the one that fired, with a payload naming it. It is pure.
func next(_ context.Context, _ *sdk.Request, p sdk.RecurrenceNextParams) (sdk.RecurrenceNextResult, error) {
	var rule string
	if err := json.Unmarshal(p.Rule, &rule); err != nil {
		return sdk.RecurrenceNextResult{}, sdk.Errorf(sdk.ErrInvalid, "timer %s: the rule is not a notes.digest interval", p.Timer)
	}
	every, err := digestEvery(p.Timer, rule)
	if err != nil {
		return sdk.RecurrenceNextResult{}, err
	}
	var d DigestData
	if err := json.Unmarshal(p.Payload.Data, &d); err != nil {
		return sdk.RecurrenceNextResult{}, sdk.Errorf(sdk.ErrInvalid, "timer %s: its payload is not a notes.digest payload", p.Timer)
	}
	at := p.After.Add(every)
	d.ScheduledAt = at
	data, err := json.Marshal(d)
	if err != nil {
		return sdk.RecurrenceNextResult{}, err
	}
	return sdk.RecurrenceNextResult{Next: at, Payload: &sdk.Payload{Schema: DigestSchema, Data: data}}, nil
}

// TimerID is the id of an entry's digest timer.
func TimerID(scope, entry string) string { return scope + "/" + entry }

// armDigests arms a digest timer for each enabled entry whose interval is
// new or changed, and cancels the timers of entries that no longer ask for
// one. Entries in disabled scopes keep theirs, and the empty generation a
// package starts with (id 0) changes nothing.
func armDigests(ctx context.Context, h *sdk.Host, p sdk.ConfigureParams) error {
	if p.Generation.ID == 0 {
		return nil
	}
	armed, err := h.List(ctx, Armed, "")
	if protocol.CodeOf(err) == protocol.CodeUnsupported {
		// A host with no store (offline validation) keeps no timers.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the armed digests: %w", err)
	}
	keep := map[string]bool{}
	for _, e := range p.Disabled {
		keep[TimerID(e.Scope, e.Name)] = true
	}
	now := time.Now().UTC()
	was := map[string]string{}
	for _, it := range armed {
		was[it.Key] = string(it.Value)
	}
	for _, e := range p.Entries {
		c, err := sdk.DecodeEntry[Config](e)
		if err != nil {
			return err
		}
		if c.DigestEvery == "" {
			continue
		}
		every, err := digestEvery(e.Name, c.DigestEvery)
		if err != nil {
			return err
		}
		id := TimerID(e.Scope, e.Name)
		keep[id] = true
		if was[id] == every.String() {
			continue
		}
		if err := armDigest(ctx, h, e, every, now); err != nil {
			return err
		}
	}
	for id := range was {
		if keep[id] {
			continue
		}
		if _, err := h.CancelTimer(ctx, id); err != nil {
			return fmt.Errorf("cancelling the digest timer of %s: %w", id, err)
		}
		if _, err := h.Commit(ctx, sdk.NewBatch().Delete(Armed, id)); err != nil {
			return err
		}
	}
	return nil
}

// armDigest arms an entry's digest timer one interval from now and
// records the interval as armed.
func armDigest(ctx context.Context, h *sdk.Host, e sdk.Entry, every time.Duration, now time.Time) error {
	due := now.Add(every)
	data, err := json.Marshal(DigestData{Entry: e.Name, ScheduledAt: due})
	if err != nil {
		return err
	}
	rule, err := json.Marshal(every.String())
	if err != nil {
		return err
	}
	id := TimerID(e.Scope, e.Name)
	err = h.ArmTimer(ctx, sdk.Timer{
		ID: id, Scope: e.Scope, Due: due, Family: Digest,
		Payload:    sdk.Payload{Schema: DigestSchema, Data: data},
		Recurrence: &sdk.RecurrenceRule{Kind: Digest, Rule: rule},
	})
	if err != nil {
		return fmt.Errorf("arming the digest timer of %s: %w", id, err)
	}
	_, err = h.Commit(ctx, sdk.NewBatch().Put(Armed, id, []byte(every.String())))
	return err
}
