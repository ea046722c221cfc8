package sdk

import "github.com/open-conduit/open-conduit/protocol"

// Declarations of routing an extension sets on Manifest.Provides until the
// SDK registers them itself.
type (
	// Route declares a route handler (its route.match is served with
	// Method).
	Route = protocol.Route
	// WorkKind declares a kind of Work the extension's routes create, with
	// its policy (standing, trigger, timed, run-once).
	WorkKind = protocol.WorkKind
)

// ValidateRoute is ValidateParams.Kind for a route on one of the
// extension's handlers.
const ValidateRoute = protocol.ValidateRoute
