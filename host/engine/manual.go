package engine

import (
	json "github.com/go-json-experiment/json"

	"github.com/open-conduit/open-conduit/host/config"
	"github.com/open-conduit/open-conduit/protocol"
)

// The builtin route handler's words.
const (
	// ManualKind is the Work kind the builtin manual route creates.
	ManualKind = "manual"
	// ManualRequest is the Event type the manual route matches: what an
	// operator's emit writes by default.
	ManualRequest = "manual.request"
)

// manualData is what the manual route reads of a manual.request payload.
type manualData struct {
	Title string `json:"title"`
	Key   string `json:"key"`
}

// matchManual is the builtin manual route: a manual.request Event creates
// (or, by its key, joins) a Work of kind manual titled from its payload.
func matchManual(ev protocol.Event) protocol.RouteMatchResult {
	if ev.Type != ManualRequest {
		return protocol.RouteMatchResult{Reason: "manual matches only " + ManualRequest + " Events"}
	}
	var data manualData
	if len(ev.Payload.Data) > 0 {
		// Other members, or a payload that is not an object, leave the
		// title to the Event type: the manual route never refuses input.
		_ = json.Unmarshal(ev.Payload.Data, &data, json.RejectUnknownMembers(false))
	}
	res := protocol.RouteMatchResult{Match: true, Kind: ManualKind, Reason: "a manual request",
		Display: &protocol.Display{Title: data.Title}}
	if data.Title == "" {
		res.Display.Title = ev.Type
	}
	if data.Key != "" {
		res.Keys = []string{data.Key}
	}
	return res
}

// isManual says a route is the builtin one.
func isManual(r config.Route) bool { return r.Handler == config.ManualHandler }
