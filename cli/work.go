package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
)

func workCommand() *command {
	return &command{name: "work", short: "Work made of routed Events: list, show, control and cancel it, read its artifacts",
		subs: []*command{
			workListCommand(), workShowCommand(), workInputsCommand(), workCancelCommand(),
			workArtifactsCommand(), workArtifactCommand(), workWaitsCommand(),
			workInterruptCommand(), workInjectCommand(), workStopCommand(), workLiveCommand(),
		}}
}

func workListCommand() *command {
	var q client.WorkQuery
	return &command{
		name:  "list",
		short: "list Work in ID order, one page after a cursor",
		long: "List one page of Work from the running daemon, in ID order (oldest first, or\n" +
			"newest first with --newest): its scope, kind, state, title (the display its\n" +
			"source gave, else its ref, else its kind), age and how many Events were routed\n" +
			"to it. When more Work follows the page, the command that reads on is printed.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&q.Scope, "scope", "", "only this scope's Work")
			// --state names the state directory, as on every command.
			fs.StringVar(&q.State, "status", "", "only Work in this state (pending, running, waiting, completed, failed, cancelled)")
			fs.StringVar(&q.After, "after", "", "list Work after this ID (a page's cursor; with --newest, Work older than it)")
			fs.BoolVar(&q.Newest, "newest", false, "list newest first (descending ID)")
			fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many Work a page (1-%d)", client.MaxWorkPage))
		},
		run: func(r *runner, _ []string) error {
			if q.Limit < 1 || q.Limit > client.MaxWorkPage {
				return usagef("--limit must be between 1 and %d", client.MaxWorkPage)
			}
			if q.State != "" && !slices.Contains(client.WorkStates, q.State) {
				return usagef("--status must be one of %s", strings.Join(client.WorkStates, ", "))
			}
			l, err := client.New(r.place.State).Works(r.ctx, q)
			if err != nil {
				return err
			}
			return r.emit(l, func(w io.Writer) error {
				if err := writeWorkList(w, l.Work, time.Now()); err != nil {
					return err
				}
				if l.Next != "" {
					_, err = fmt.Fprintf(w, "more: %s\n", r.rerun(map[string]string{"after": l.Next}))
				}
				return err
			})
		},
	}
}

// writeWorkList is a page of Work as a table; now dates the ages.
func writeWorkList(w io.Writer, ws []client.Work, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tKIND\tSTATE\tTITLE\tAGE\tINPUTS")
	for _, x := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", x.ID, x.Scope, x.Kind, x.State, firstLine(x.Label()), age(now, x.Created), inputCount(x))
	}
	return tw.Flush()
}

// inputCount is how many Events were routed to x: its count, or the
// inputs it lists when it has none (a daemon that did not count them).
func inputCount(x client.Work) int { return max(x.InputCount, len(x.Inputs)) }

// age is how long ago t was, in its largest unit.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

func workShowCommand() *command {
	return &command{
		name:  "show",
		usage: "ID",
		short: "show one Work: display, keys, state, and its inputs with their routing",
		long: "Show one Work: its display (title, ref, requester, links), kind, keys, state and\n" +
			"why, binding, context and grants, the Wait it waits on (who declared it, what for,\n" +
			"its progress and when it wakes), how many inputs it has, its attempts (each\n" +
			"execution's executor, lease epoch, state, outcome, exit code, start and end), and\n" +
			"its latest inputs: each Event's sequence, time and type, and the route that\n" +
			"brought it. 'work inputs ID' pages through all of them; 'work artifacts ID' lists\n" +
			"what its executions wrote.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		run: func(r *runner, args []string) error {
			d, err := client.New(r.place.State).WorkDetail(r.ctx, args[0])
			if err != nil {
				return err
			}
			return r.emit(d, func(w io.Writer) error { return writeWorkDetail(w, d) })
		},
	}
}

// writeWorkDetail is one Work as name and value lines, then its inputs.
func writeWorkDetail(w io.Writer, d client.WorkDetail) error {
	x := d.Work
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := x.State
	if x.Reason != "" {
		state += " (" + firstLine(x.Reason) + ")"
	}
	fmt.Fprintf(tw, "id\t%s\n", x.ID)
	fmt.Fprintf(tw, "scope\t%s\n", x.Scope)
	fmt.Fprintf(tw, "kind\t%s\n", x.Kind)
	fmt.Fprintf(tw, "state\t%s\n", state)
	if h := x.Hold; h != nil && h.Held {
		fmt.Fprintf(tw, "held\tby %s's start gate since %s: %s (it settles the hold)\n", h.Package, h.Since.Format(time.RFC3339), dash(h.Reason))
	}
	if dp := x.Display; dp != nil {
		fmt.Fprintf(tw, "title\t%s\n", dash(dp.Title))
		fmt.Fprintf(tw, "ref\t%s\n", dash(dp.Ref))
		fmt.Fprintf(tw, "requester\t%s\n", dash(dp.Requester))
		for _, l := range dp.Links {
			fmt.Fprintf(tw, "link\t%s %s\n", l.Label, l.URL)
		}
	} else {
		fmt.Fprintf(tw, "title\t- (its source gave no display)\n")
	}
	fmt.Fprintf(tw, "keys\t%s\n", dash(strings.Join(x.Keys, ", ")))
	fmt.Fprintf(tw, "binding\t%s\n", dash(x.Binding))
	fmt.Fprintf(tw, "context\t%s\n", dash(string(x.Context)))
	fmt.Fprintf(tw, "grants\t%s\n", dash(strings.Join(x.Grants, ", ")))
	fmt.Fprintf(tw, "trigger\t%s\n", dash(x.Trigger))
	fmt.Fprintf(tw, "created\t%s\n", timeText(x.Created))
	fmt.Fprintf(tw, "updated\t%s\n", timeText(x.Updated))
	if n := inputCount(x); len(d.Inputs) < n {
		fmt.Fprintf(tw, "inputs\t%d inputs (last %d shown; 'open-conduit work inputs %s' lists them all)\n", n, len(d.Inputs), x.ID)
	} else {
		fmt.Fprintf(tw, "inputs\t%d\n", n)
	}
	if d.Wait != nil {
		fmt.Fprintf(tw, "wait\t%s\n", waitText(d.Wait, time.Now()))
	}
	fmt.Fprintf(tw, "attempts\t%d\n", len(d.Executions))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Executions) > 0 {
		fmt.Fprintln(w)
		if err := writeAttempts(w, d.Executions); err != nil {
			return err
		}
	}
	if len(d.Inputs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return writeInputs(w, d.Inputs)
}

// writeInputs is a table of a Work's inputs: each one's number, its
// Event's sequence, time, type and ID, and the route that brought it.
func writeInputs(w io.Writer, ins []client.WorkInput) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tSEQ\tTIME\tTYPE\tEVENT\tROUTE")
	for _, in := range ins {
		e := in.Event
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", dash(numberText(in.N)), e.Sequence, timeText(e.Time), e.Type, e.ID, decisionText(in.Route))
	}
	return tw.Flush()
}

// numberText is n in decimal, or "" for 0 (not numbered).
func numberText(n uint64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

func workInputsCommand() *command {
	var q client.WorkInputsQuery
	return &command{
		name:  "inputs",
		usage: "ID",
		short: "list a Work's inputs in the order they came, one page after a cursor",
		long: "List one page of the Events routed to a Work, in the order they were routed:\n" +
			"each input's number, its Event's sequence, time, type and ID, and the route\n" +
			"that brought it. --after takes an input's number; when more inputs follow the\n" +
			"page, the command that reads on is printed.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.Uint64Var(&q.After, "after", 0, "list the inputs numbered after this one (a page's cursor)")
			fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("at most this many inputs a page (1-%d)", client.MaxWorkInputsPage))
		},
		run: func(r *runner, args []string) error {
			if q.Limit < 1 || q.Limit > client.MaxWorkInputsPage {
				return usagef("--limit must be between 1 and %d", client.MaxWorkInputsPage)
			}
			p, err := client.New(r.place.State).WorkInputs(r.ctx, args[0], q)
			if err != nil {
				return err
			}
			var more string
			if p.Next != 0 {
				more = inputsRerun(r, args[0], p.Next)
			}
			return r.emit(p, func(w io.Writer) error { return writeInputsPage(w, p, more) })
		},
	}
}

// inputsRerun is the work inputs command that reads on after input next:
// this one with the Work's ID after the command path, before the flags.
func inputsRerun(r *runner, id string, next uint64) string {
	rest := strings.TrimPrefix(r.rerun(map[string]string{"after": strconv.FormatUint(next, 10)}), r.path)
	return r.path + " " + shellQuote(id) + rest
}

// writeInputsPage is a page of a Work's inputs, how many it has, and more,
// the command that reads on, when it is set.
func writeInputsPage(w io.Writer, p client.WorkInputsPage, more string) error {
	if len(p.Inputs) == 0 {
		return writeLines(w, fmt.Sprintf("no inputs of %s here (it has %d)", p.Work, p.InputCount))
	}
	if err := writeInputs(w, p.Inputs); err != nil {
		return err
	}
	first, last := p.Inputs[0].N, p.Inputs[len(p.Inputs)-1].N
	if _, err := fmt.Fprintf(w, "inputs %d-%d of %d\n", first, last, p.InputCount); err != nil {
		return err
	}
	if more == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "more: %s\n", more)
	return err
}

// decisionText says in a few words how an Event was routed.
func decisionText(d *client.RouteDecision) string {
	if d == nil {
		return "-"
	}
	switch d.State {
	case client.RouteRouted:
		how := "joined"
		if d.Created {
			how = "created"
		}
		s := fmt.Sprintf("route %d%s %s %s", d.Route, handlerOf(d), how, d.Work)
		if d.DisplayRefused != "" {
			s += "; display dropped: " + d.DisplayRefused
		}
		return s
	case client.RouteUnmatched:
		return "unmatched"
	case client.RouteFailed:
		return fmt.Sprintf("failed (%d attempts), retrying", d.Attempts)
	}
	return dash(d.State)
}

// handlerOf is " (handler)" of the route that matched, when the decision
// names it.
func handlerOf(d *client.RouteDecision) string {
	for _, rr := range d.Reasons {
		if rr.Route == d.Route && rr.Handler != "" {
			return " (" + rr.Handler + ")"
		}
	}
	return ""
}

func workCancelCommand() *command {
	var reason string
	return &command{
		name:  "cancel",
		usage: "ID",
		short: "cancel an open Work, with a reason",
		long: "Cancel an open Work (pending, running or waiting); its reason is recorded on it,\n" +
			"and a later Event with one of its keys makes a new Work. A finished Work\n" +
			"(completed, failed or cancelled) is refused with its state.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why it is cancelled (recorded on the Work)")
		},
		run: func(r *runner, args []string) error {
			x, err := client.New(r.place.State).CancelWork(r.ctx, args[0], reason)
			if err != nil {
				return err
			}
			return r.emit(x, func(w io.Writer) error {
				s := fmt.Sprintf("%s: %s", x.ID, x.State)
				if x.Reason != "" {
					s += " (" + firstLine(x.Reason) + ")"
				}
				return writeLines(w, s)
			})
		},
	}
}
