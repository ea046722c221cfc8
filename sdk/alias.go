package sdk

import "github.com/open-conduit/open-conduit/protocol"

// The wire types an author meets, under the names the protocol gives them,
// so an extension imports only this package. They are aliases: a value of
// one is the protocol's value, and a host or tool using the protocol package
// reads it unchanged.
type (
	// Authority is who an operation call is for (scope, work, execution,
	// connection, caller). The host builds it; the extension never
	// supplies it.
	Authority = protocol.Authority
	// Payload is a schema name and raw JSON data: an operation's input or
	// output, an Event's body.
	Payload = protocol.Payload
	// Emission is an Event of one of the extension's families, accepted with
	// the KV batch that carries it (Batch.Emit).
	Emission = protocol.Emission
	// EmissionResult is what the host did with one Emission: its Event's ID
	// and whether it was new.
	EmissionResult = protocol.EmissionResult
	// Entry is one config entry of a type the extension declares: its scope,
	// name, type and config as the operator wrote it.
	Entry = protocol.Entry
	// Event is an Event of the host's log.
	Event = protocol.Event
	// Setting is a top-level entry config field that is safe to show the
	// operator (see Settings).
	Setting = protocol.Setting
	// Field describes one config field of a declared type for the operator.
	Field = protocol.Field
	// Error is an error with a stable wire code; match it with errors.Is
	// against a sentinel (ErrConflict …) and make one with Errorf.
	Error = protocol.Error
	// Manifest is the extension's declaration, derived from its
	// registrations.
	Manifest = protocol.Manifest
	// ConfigureParams is one config generation: the entries of the
	// extension's types and the KV layout versions.
	ConfigureParams = protocol.ConfigureParams
	// ConfigureResult answers a generation with the ingress sources and
	// webhook paths the extension registers.
	ConfigureResult = protocol.ConfigureResult
	// ValidateParams is one config object of a declared type to check.
	ValidateParams = protocol.ValidateParams
	// ValidateResult accepts an object, with warnings if any.
	ValidateResult = protocol.ValidateResult
	// CheckConfig is what a doctor check sees of the live configuration
	// (Request.Config): the extension's enabled scopes, its own entries,
	// the routes and bindings there, its connections' config; no secrets.
	CheckConfig = protocol.CheckConfig
	// KVItem is one key of a namespace as List returns it.
	KVItem = protocol.KVItem
	// KVCommitResult is what a committed batch did: each emission's Event.
	KVCommitResult = protocol.KVCommitResult
	// IngressDeliverParams is one input from the extension's own receiver.
	IngressDeliverParams = protocol.IngressDeliverParams
	// IngressDeliverResult is the host's durable acceptance of a delivery.
	IngressDeliverResult = protocol.IngressDeliverResult
	// ArtifactCreateParams names an artifact to write.
	ArtifactCreateParams = protocol.ArtifactCreateParams
	// ArtifactCommitResult is a committed artifact.
	ArtifactCommitResult = protocol.ArtifactCommitResult
)

// ValidateExtension is ValidateParams.Kind for an entry of one of the
// extension's entry types.
const ValidateExtension = protocol.ValidateExtension

// The error sentinels an extension refuses with or matches on. Refuse with
// Errorf(ErrInvalid, "…what to change…"); match a host's answer with
// errors.Is(err, ErrConflict). An error that is none of these crosses the
// wire as internal, its text kept in the extension's log.
var (
	// ErrInvalid: a config object or an operation's request is wrong.
	ErrInvalid = protocol.ErrInvalid
	// ErrBadRequest: an operation's input does not fit its schema.
	ErrBadRequest = protocol.ErrBadRequest
	// ErrNotFound: what the call names does not exist.
	ErrNotFound = protocol.ErrNotFound
	// ErrConflict: a KV precondition failed; re-read and retry.
	ErrConflict = protocol.ErrConflict
	// ErrUnauthorized: outside the extension's own namespaces or scopes.
	ErrUnauthorized = protocol.ErrUnauthorized
	// ErrUnsupported: the host or the extension does not serve this.
	ErrUnsupported = protocol.ErrUnsupported
	// ErrUndeclared: the manifest does not declare what the call names.
	ErrUndeclared = protocol.ErrUndeclared
	// ErrTooLarge: a value, payload or name over its bound.
	ErrTooLarge = protocol.ErrTooLarge
	// ErrUnavailable: a dependency is down; the call may succeed later.
	ErrUnavailable = protocol.ErrUnavailable
	// ErrRetryAfter: rate limited; Error.ResetAt says when to retry.
	ErrRetryAfter = protocol.ErrRetryAfter
	// ErrCancelled: the caller cancelled the request.
	ErrCancelled = protocol.ErrCancelled
	// ErrInternal: an unauthored failure.
	ErrInternal = protocol.ErrInternal
)

// Errorf returns an error with the sentinel's wire code and a formatted
// message saying what went wrong and what to change:
//
//	return sdk.Errorf(sdk.ErrInvalid, "name is empty: say who to greet")
func Errorf(sentinel *Error, format string, args ...any) error {
	return protocol.Errorf(sentinel, format, args...)
}
