package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/open-conduit/open-conduit/client"
)

func eventsShowCommand() *command {
	return &command{
		name:  "show",
		usage: "ID",
		short: "show one Event: scope, source, type, time, its route and its rendering",
		long: "Show one Event of the log: its scope, source, type, delivery and time (in the\n" +
			"local zone with its offset), where it was routed, and its rendering as a prompt\n" +
			"would read it. The package that owns the Event's family renders it when it\n" +
			"declares render and reads the payload's schema; otherwise the daemon renders it\n" +
			"generically (type, source, time and the payload's JSON) and says why.",
		minArgs: 1, maxArgs: 1, state: true, json: true,
		run: func(r *runner, args []string) error {
			ev, err := client.New(r.place.State).RenderEvent(r.ctx, args[0])
			if err != nil {
				return err
			}
			return r.emit(ev, func(w io.Writer) error { return writeEventShow(w, ev) })
		},
	}
}

// writeEventShow is one Event as name and value lines, then its rendering.
func writeEventShow(w io.Writer, v client.EventRender) error {
	e := v.Event
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", e.ID)
	fmt.Fprintf(tw, "sequence\t%d\n", e.Sequence)
	fmt.Fprintf(tw, "scope\t%s\n", dash(e.Scope))
	fmt.Fprintf(tw, "source\t%s\n", dash(e.Source))
	fmt.Fprintf(tw, "type\t%s\n", e.Type)
	fmt.Fprintf(tw, "delivery\t%s\n", dash(e.DeliveryID))
	fmt.Fprintf(tw, "time\t%s\n", timeText(e.Time))
	fmt.Fprintf(tw, "schema\t%s\n", dash(e.Payload.Schema))
	route := "pending: the router has not decided yet"
	if v.Route.State != client.RoutePending {
		route = routedText(v.Route)
	}
	fmt.Fprintf(tw, "route\t%s\n", route)
	rendered := "rendered by " + v.RenderedBy
	if v.RenderedBy == client.RenderedGeneric {
		rendered = "rendered generically: " + oneLine(v.Fallback)
	}
	fmt.Fprintf(tw, "rendering\t%s\n", rendered)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.TrimRight(v.Text, "\n"))
	return err
}
