package pages

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/open-conduit/open-conduit/tui/common"
)

// follower is what the Logs and Wire panes share: which of the daemon's
// packages the pane follows, and the long poll that follows it, one read
// at a time. A new choice ends the read still out for the old one, and
// its answer, when it comes, only starts the new one's read; a failed read
// is said and tried again after the retry delay.
type follower[T any] struct {
	c *common.Common
	// pane is the pane's title (a SwitchMsg names it); what names what is
	// read, for a failure ("the log").
	pane, what string
	retry      time.Duration
	// query is the next read of package name, made from the pane's
	// cursors as they are now, to run on its own goroutine.
	query func(name string) func(ctx context.Context) (T, error)
	// reset drops what was read of the package followed before; take
	// keeps an answer for the one followed now.
	reset func()
	take  func(T)

	// names is the daemon's packages, for left and right.
	names []string
	// name is the package followed; gen counts the choices, so the
	// answer to a read for an earlier one is dropped.
	name string
	gen  int
	// inFlight says a read is out; stop ends it early.
	inFlight bool
	stop     context.CancelFunc
	// failed is why the last read failed, while it is retried.
	failed string
}

type (
	// followedMsg is the answer to one read of a follower.
	followedMsg[T any] struct {
		f   *follower[T]
		gen int
		v   T
		err error
	}
	// followRetryMsg asks a follower again after a failed read.
	followRetryMsg[T any] struct {
		f   *follower[T]
		gen int
	}
)

// update takes the messages a follower answers: the package list, the
// pane shown or switched to, a read's answer and a retry. It reports
// whether the message was its.
func (f *follower[T]) update(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case common.Snapshot:
		f.names = f.names[:0]
		for _, e := range msg.Extensions.Extensions {
			f.names = append(f.names, e.Name)
		}
		return nil, true
	case common.ShownMsg:
		// Shown following no package yet: follow the one the Extensions
		// pane points at, else the first.
		if f.name == "" {
			return f.choose(cmp.Or(msg.Package, cycle(f.names, "", 0))), true
		}
		return nil, true
	case common.SwitchMsg:
		if msg.Pane == f.pane && msg.Package != "" {
			return f.choose(msg.Package), true
		}
		return nil, true
	case followedMsg[T]:
		if msg.f != f {
			return nil, false
		}
		return f.answered(msg), true
	case followRetryMsg[T]:
		if msg.f != f {
			return nil, false
		}
		if msg.gen == f.gen && !f.inFlight {
			return f.read(), true
		}
		return nil, true
	}
	return nil, false
}

// packageKey takes the keys that choose the next or previous package, and
// reports whether msg was one.
func (f *follower[T]) packageKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, nextPackageKey):
		return f.choose(cycle(f.names, f.name, 1)), true
	case key.Matches(msg, prevPackageKey):
		return f.choose(cycle(f.names, f.name, -1)), true
	}
	return nil, false
}

// choose follows package name from the start, dropping what was read of
// the one followed before; a read still out for that one is ended, and
// the new read starts when its answer comes.
func (f *follower[T]) choose(name string) tea.Cmd {
	if name == "" || name == f.name {
		return nil
	}
	f.gen++
	f.name, f.failed = name, ""
	f.reset()
	if f.inFlight {
		f.stop()
		return nil
	}
	return f.read()
}

// read starts the next read of the package followed.
func (f *follower[T]) read() tea.Cmd {
	run, gen := f.query(f.name), f.gen
	ctx, stop := context.WithCancel(f.c.Ctx)
	f.inFlight, f.stop = true, stop
	return func() tea.Msg {
		defer stop()
		v, err := run(ctx)
		return followedMsg[T]{f: f, gen: gen, v: v, err: err}
	}
}

// answered takes a read's answer and starts the next read.
func (f *follower[T]) answered(msg followedMsg[T]) tea.Cmd {
	f.inFlight = false
	if msg.gen != f.gen {
		return f.read()
	}
	if msg.err != nil {
		if f.c.Ctx.Err() != nil {
			return nil
		}
		f.failed = fmt.Sprintf("reading %s of %s: %v; trying again in %s", f.what, f.name, msg.err, f.retry)
		gen := f.gen
		return tea.Tick(f.retry, func(time.Time) tea.Msg { return followRetryMsg[T]{f: f, gen: gen} })
	}
	f.failed = ""
	f.take(msg.v)
	return f.read()
}

// cycle is the name step places from current in names (wrapping), the
// first when current is not among them.
func cycle(names []string, current string, step int) string {
	if len(names) == 0 {
		return current
	}
	for i, n := range names {
		if n == current {
			return names[(i+step+len(names))%len(names)]
		}
	}
	return names[0]
}
