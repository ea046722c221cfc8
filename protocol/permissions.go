package protocol

// Permissions a manifest may ask for. Each gates host services that reach
// beyond the package's own surfaces; an unknown one means the package needs a
// newer Open Conduit.
const (
	PermissionTelemetrySink    = "telemetry.sink"
	PermissionTelemetryCapture = "telemetry.capture"
	PermissionProbes           = "probes"
	PermissionConfigRead       = "config.read"
	PermissionStartGate        = "work.start_gate"
	PermissionOperationGate    = "operation.gate"
	PermissionActionSubmit     = "action.submit"
)

// KnownPermissions lists every permission this host knows, with what it
// allows, in the order operators see them.
var KnownPermissions = []string{
	PermissionTelemetrySink,
	PermissionTelemetryCapture,
	PermissionProbes,
	PermissionConfigRead,
	PermissionStartGate,
	PermissionOperationGate,
	PermissionActionSubmit,
}

// PermissionMeaning says what each permission allows, for install and list.
var PermissionMeaning = map[string]string{
	PermissionTelemetrySink:    "receives every named telemetry event the host records, from every scope",
	PermissionTelemetryCapture: "records named telemetry events for its scopes or the machine",
	PermissionProbes:           "lists and runs the host's read-only setup probes",
	PermissionConfigRead:       "reads the whole (redacted) configuration and builds candidates; never applies",
	PermissionStartGate:        "is asked before the first attempt of any Work in its scopes and may hold it",
	PermissionOperationGate:    "is asked about other extensions' toolbelt calls in its scopes and may park or refuse them",
	PermissionActionSubmit:     "invokes and lists actions for people it identified on its own surface",
}
