package tui

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/open-conduit/open-conduit/client"
)

func (f *fakeAPI) ControlWork(_ context.Context, work, control, text string) (client.ControlResult, error) {
	if err := f.fail(); err != nil {
		return client.ControlResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls = append(f.controls, strings.TrimSpace(work+" "+control+" "+text))
	return client.ControlResult{}, nil
}

func (f *fakeAPI) WorkArtifacts(_ context.Context, work string) (client.Artifacts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return client.Artifacts{Artifacts: f.artifacts[work]}, nil
}

// Logs answers the last tail lines; the offset is the count of lines.
func (f *fakeAPI) Logs(_ context.Context, name string, tail int) (client.Log, error) {
	if err := f.fail(); err != nil {
		return client.Log{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	lines, ok := f.logs[name]
	if !ok {
		return client.Log{}, errors.New("no extension is named " + name)
	}
	from := max(0, len(lines)-tail)
	return client.Log{Extension: name, Lines: append([]string(nil), lines[from:]...), Offset: int64(len(lines))}, nil
}

// LogsAfter answers the lines after offset (a count of lines) at once:
// the fake does not wait.
func (f *fakeAPI) LogsAfter(ctx context.Context, name string, offset int64, wait time.Duration) (client.Log, error) {
	if err := f.fail(); err != nil {
		return client.Log{}, err
	}
	f.mu.Lock()
	lines := f.logs[name]
	f.mu.Unlock()
	if int(offset) >= len(lines) {
		select {
		case <-time.After(min(wait, 50*time.Millisecond)):
		case <-ctx.Done():
			return client.Log{}, ctx.Err()
		}
		return client.Log{Extension: name, Offset: offset}, nil
	}
	return client.Log{Extension: name, Lines: append([]string(nil), lines[offset:]...), Offset: int64(len(lines))}, nil
}

func (f *fakeAPI) Wire(ctx context.Context, name string, q client.WireQuery) (client.WirePage, error) {
	if err := f.fail(); err != nil {
		return client.WirePage{}, err
	}
	f.mu.Lock()
	var out []client.WireEntry
	for _, e := range f.wire[name] {
		if e.Seq > q.After {
			out = append(out, e)
		}
	}
	f.mu.Unlock()
	if len(out) == 0 && q.Wait > 0 {
		select {
		case <-time.After(min(q.Wait, 50*time.Millisecond)):
		case <-ctx.Done():
			return client.WirePage{}, ctx.Err()
		}
	}
	page := client.WirePage{Extension: name, Entries: out, Next: q.After, Oldest: 1}
	f.mu.Lock()
	if all := f.wire[name]; len(all) > 0 {
		page.Latest = all[len(all)-1].Seq
	}
	f.mu.Unlock()
	if len(out) > 0 {
		page.Next = out[len(out)-1].Seq
	}
	return page, nil
}

func (f *fakeAPI) Restart(_ context.Context, name string, _ time.Duration) (client.RestartResult, error) {
	if err := f.fail(); err != nil {
		return client.RestartResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, name)
	return client.RestartResult{}, nil
}

func (f *fakeAPI) ReloadConfig(context.Context) (client.Applied, error) {
	if err := f.fail(); err != nil {
		return client.Applied{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return client.Applied{Applied: true, Generation: int64(f.reloads + 1)}, nil
}

func (f *fakeAPI) Doctor(context.Context, ...client.DoctorOptions) (client.Doctor, error) {
	if err := f.fail(); err != nil {
		return client.Doctor{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doctor, nil
}

// Events answers the route decisions the test set, for the Events after
// q.After; the fake's log is the Events the test fed through the feed, so
// it answers no Events, only routes.
func (f *fakeAPI) Events(_ context.Context, q client.EventsQuery) (client.Events, error) {
	if err := f.fail(); err != nil {
		return client.Events{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eventReads++
	return client.Events{Routes: maps.Clone(f.routes)}, nil
}
