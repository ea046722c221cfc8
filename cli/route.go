package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"

	"github.com/open-conduit/open-conduit/client"
	"github.com/open-conduit/open-conduit/protocol"
)

func routeCommand() *command {
	var (
		trace, samples   bool
		scope, typ, data string
	)
	return &command{
		name:  "route",
		short: "explain routing: trace a hypothetical Event, or list sample Events",
		long: "Explain how a scope's routes decide. With --trace, ask every route of the scope,\n" +
			"in order, how it would decide an Event of --type with --data as its payload,\n" +
			"and say which route would win and the Work it would create or join; nothing is\n" +
			"written. With --samples, list the sample Events the scope's route handlers\n" +
			"offer to trace. Exactly one of --trace and --samples is required.",
		state: true, json: true,
		flags: func(fs *pflag.FlagSet) {
			boolFlag(fs, &trace, "trace", "", "trace a hypothetical Event through the scope's routes")
			boolFlag(fs, &samples, "samples", "", "list the sample Events the scope's route handlers offer")
			fs.StringVar(&scope, "scope", "", "the scope whose routes to ask (required)")
			fs.StringVar(&typ, "type", "", "the traced Event's type (required with --trace)")
			fs.StringVar(&data, "data", "{}", "the traced Event's payload data, a JSON object")
		},
		run: func(r *runner, _ []string) error {
			switch {
			case trace == samples:
				return usagef("give exactly one of --trace and --samples")
			case scope == "":
				return usagef("--scope is required: name the scope whose routes to ask")
			case samples:
				return routeSamples(r, scope)
			case typ == "":
				return usagef("--type is required with --trace: name the type of the Event to trace")
			}
			d, err := objectFlag("data", data)
			if err != nil {
				return err
			}
			return routeTrace(r, scope, client.TraceEvent{Type: typ, Payload: protocol.Payload{Data: d}})
		},
	}
}

// objectFlag checks that a flag's value is one JSON object.
func objectFlag(name, v string) (jsontext.Value, error) {
	d := jsontext.Value(v)
	if !d.IsValid() || d.Kind() != '{' {
		return nil, usagef("--%s must be a JSON object, like '{\"title\": \"x\"}'", name)
	}
	return d, nil
}

func routeTrace(r *runner, scope string, ev client.TraceEvent) error {
	t, err := client.New(r.place.State).RouteTrace(r.ctx, scope, ev)
	if err != nil {
		return err
	}
	return r.emit(t, func(w io.Writer) error { return writeTrace(w, t) })
}

// writeTrace is each route's verdict, then the decision.
func writeTrace(w io.Writer, t client.Trace) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tHANDLER\tMATCH\tREASON")
	for _, rr := range t.Routes {
		verdict, why := "no", rr.Reason
		switch {
		case rr.Error != "":
			verdict, why = "error", rr.Error
		case rr.Match:
			verdict = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", rr.Route, rr.Handler, verdict, dash(firstLine(why)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeLines(w, traceDecisionText(t))
}

// traceDecisionText says in one line what routing would do.
func traceDecisionText(t client.Trace) string {
	d := t.Decision
	switch {
	case !d.Match && d.Refused != "":
		return "no Work: " + d.Refused
	case !d.Match && len(t.Routes) == 0:
		return fmt.Sprintf("scope %s has no routes: the Event would be unmatched", t.Scope)
	case !d.Match:
		return "no route matches: the Event would be unmatched"
	}
	s := fmt.Sprintf("route %d (%s) wins: ", d.Route, d.Handler)
	switch {
	case d.Refused != "":
		s += "no Work: " + d.Refused
	case d.Join != "":
		s += "the Event would join " + d.Join
	default:
		s += "a new Work of kind " + dash(d.Kind)
	}
	if len(d.Keys) > 0 {
		s += ", keys " + strings.Join(d.Keys, ", ")
	}
	if d.Display != nil && d.Display.Title != "" {
		s += fmt.Sprintf(", titled %q", d.Display.Title)
	}
	if d.DisplayRefused != "" {
		s += "; its display would be dropped: " + d.DisplayRefused
	}
	return s
}

func routeSamples(r *runner, scope string) error {
	s, err := client.New(r.place.State).RouteSamples(r.ctx, scope)
	if err != nil {
		return err
	}
	return r.emit(s, func(w io.Writer) error { return writeSamples(w, r, s) })
}

// writeSamples is the samples as a table, the handlers that failed, and
// how to trace one.
func writeSamples(w io.Writer, r *runner, s client.Samples) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tHANDLER\tID\tTYPE\tTITLE")
	for _, x := range s.Samples {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", x.Route, x.Handler, x.ID, x.Event.Type, dash(firstLine(x.Title)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "route %d (%s) gave no samples: %s\n", e.Route, e.Handler, firstLine(e.Error))
	}
	if len(s.Samples) == 0 {
		return writeLines(w, fmt.Sprintf("no samples: no route handler of scope %s offers any", s.Scope))
	}
	x := s.Samples[0]
	return writeLines(w, "trace one with: "+r.rerun(map[string]string{"samples": "", "trace": "true",
		"type": x.Event.Type, "data": string(orEmpty(x.Event.Payload.Data))}))
}

// orEmpty is v, or an empty object for none.
func orEmpty(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("{}")
	}
	return v
}
