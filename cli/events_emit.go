package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

// routeWait is how long events emit waits for its Event to be routed.
const routeWait = 5 * time.Second

// emitted is what events emit prints: the Event and how it was routed so
// far.
type emitted struct {
	Event protocol.Event       `json:"event"`
	Route client.RouteDecision `json:"route"`
}

func eventsEmitCommand() *command {
	var scope, typ, data string
	return &command{
		name:  "emit",
		short: "accept an operator's Event into a scope, and say where it was routed",
		long: "Accept an Event into a scope as the operator (source operator), then wait\n" +
			"briefly for the router and say where it went: the Work it created or joined,\n" +
			"or why no route matched. The default type, manual.request, is what the builtin\n" +
			"route handler manual makes Work of: its title is --data's title, its key\n" +
			"--data's key.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&scope, "scope", "", "the configured scope to accept the Event into (required)")
			fs.StringVar(&typ, "type", client.DefaultEmitType, "the Event's type")
			fs.StringVar(&data, "data", "{}", "the Event's payload data, a JSON object")
		},
		run: func(r *runner, _ []string) error {
			if scope == "" {
				return usagef("--scope is required: name the scope the Event belongs to")
			}
			if typ == "" {
				return usagef("--type must not be empty")
			}
			d, err := objectFlag("data", data)
			if err != nil {
				return err
			}
			c := client.New(r.place.State)
			ev, err := c.Emit(r.ctx, client.EmitRequest{Scope: scope, Type: typ, Data: d})
			if err != nil {
				return err
			}
			route, err := c.EventRoute(r.ctx, ev.ID, routeWait)
			if err != nil {
				return fmt.Errorf("the Event %s (seq %d) was accepted, but reading where it was routed failed: %w", ev.ID, ev.Sequence, err)
			}
			out := emitted{Event: ev, Route: route}
			return r.emit(out, func(w io.Writer) error {
				return writeLines(w, fmt.Sprintf("accepted %s (seq %d) into %s", ev.ID, ev.Sequence, ev.Scope), routedText(route))
			})
		},
	}
}

// routedText says in one line where an Event went.
func routedText(d client.RouteDecision) string {
	switch d.State {
	case client.RouteRouted:
		how := "joined"
		if d.Created {
			how = "created"
		}
		return fmt.Sprintf("routed by route %d%s: %s %s", d.Route, handlerOf(&d), how, d.Work)
	case client.RouteUnmatched:
		var why []string
		for _, rr := range d.Reasons {
			why = append(why, fmt.Sprintf("route %d (%s): %s", rr.Route, rr.Handler, dash(firstLine(rr.Reason+rr.Error))))
		}
		if len(why) == 0 {
			return "unmatched: the scope has no routes"
		}
		return "unmatched: " + strings.Join(why, "; ")
	case client.RouteFailed:
		return fmt.Sprintf("not routed yet: a route failed (%d attempts) and the router retries it; 'open-conduit events list' shows where it goes", d.Attempts)
	}
	return fmt.Sprintf("not routed within %s; 'open-conduit events list' shows where it goes", routeWait)
}

// eventRouteText is an events list cell: where the Event went.
func eventRouteText(r client.EventRoute, listed bool) string {
	switch {
	case !listed:
		return "-"
	case r.State == client.RouteRouted:
		return "routed to " + r.Work
	}
	return dash(r.State)
}
