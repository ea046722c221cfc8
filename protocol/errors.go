package protocol

import (
	"errors"
	"fmt"
	"sync"
)

// Error is an error with a stable wire code. Every refusal that crosses the
// protocol is an *Error: the code is what a program matches on, the message is
// what a person reads. Errors compare equal under errors.Is when their codes
// match, so a sentinel such as ErrConflict matches any conflict however it was
// worded.
type Error struct {
	// Code is the stable [a-z][a-z0-9_]* code (CodeConflict, …).
	Code string
	// Message says what went wrong and, where it can, what to change.
	Message string
	// ResetAt is the optional retry hint of a retry_after refusal, as RFC 3339
	// text. It is the only structured detail that crosses besides the code.
	ResetAt string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// Errorf returns an *Error with the sentinel's code and a formatted message.
// It is how authored refusals are written:
//
//	return protocol.Errorf(protocol.ErrConflict, "key %q changed since it was read", key)
func Errorf(sentinel *Error, format string, args ...any) *Error {
	return &Error{Code: sentinel.Code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the wire code err carries, or "" when err is not (and does not
// wrap) an *Error. Unauthored errors have no code and cross as internal.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Wire codes. The first group is the seed's error table, mapped onto the
// public sentinels; the second is the protocol's own; the third are the
// JSON-RPC reserved codes given names; the last are host-side diagnostics
// that never cross the wire from an extension but are reported with a code.
const (
	CodeInvalid              = "invalid"
	CodeUnsupported          = "unsupported"
	CodeUnauthorized         = "unauthorized"
	CodeUndeclared           = "undeclared"
	CodeNotFound             = "not_found"
	CodeConflict             = "conflict"
	CodeCausalLimit          = "causal_limit"
	CodeNotAdoptable         = "not_adoptable"
	CodeNotAccepting         = "not_accepting"
	CodeNothingToAttach      = "nothing_to_attach"
	CodeNotLive              = "not_live"
	CodeResourceSetupFailed  = "resource_setup_failed"
	CodeResourceNotFound     = "resource_not_found"
	CodeResourceExhausted    = "resource_exhausted"
	CodeSandboxDenied        = "sandbox_denied"
	CodeSandboxUnavailable   = "sandbox_unavailable"
	CodeContainerRunning     = "container_running"
	CodeContainerUnconfirmed = "container_unconfirmed"
	CodeRetryAfter           = "retry_after"
	CodeBadRequest           = "bad_request"
	CodeUnreadableSchema     = "unreadable_schema"
	CodeGateFailed           = "gate_failed"
	CodeTooLarge             = "too_large"
	CodeStorageFull          = "storage_full"

	CodeUnsupportedProtocolVersion = "unsupported_protocol_version"
	CodeReentrantCall              = "reentrant_call"
	CodeOverloaded                 = "overloaded"
	CodeCancelled                  = "cancelled"
	CodeShuttingDown               = "shutting_down"
	CodeInternal                   = "internal"
	CodeNotInitialized             = "not_initialized"

	CodeParse          = "parse_error"
	CodeMethodNotFound = "method_not_found"
	CodeInvalidParams  = "invalid_params"

	CodeTransport        = "transport"
	CodeNeedsNewerHost   = "needs_newer_host"
	CodeStartFailed      = "start_failed"
	CodeHandshakeFailed  = "handshake_failed"
	CodeManifestMismatch = "manifest_mismatch"
	CodeKVDowngrade      = "kv_downgrade"
	CodeConfigureRefused = "configure_refused"
	CodeUnavailable      = "unavailable"
	// CodeIncompatibleProtocol: discovery skips a package that shares no
	// protocol version with this host.
	CodeIncompatibleProtocol = "incompatible_protocol"
)

// Sentinels, one per code. Match with errors.Is; refuse with Errorf.
var (
	ErrInvalid              = &Error{Code: CodeInvalid, Message: "invalid"}
	ErrUnsupported          = &Error{Code: CodeUnsupported, Message: "unsupported"}
	ErrUnauthorized         = &Error{Code: CodeUnauthorized, Message: "unauthorized"}
	ErrUndeclared           = &Error{Code: CodeUndeclared, Message: "undeclared"}
	ErrNotFound             = &Error{Code: CodeNotFound, Message: "not found"}
	ErrConflict             = &Error{Code: CodeConflict, Message: "conflict"}
	ErrCausalLimit          = &Error{Code: CodeCausalLimit, Message: "causal limit"}
	ErrNotAdoptable         = &Error{Code: CodeNotAdoptable, Message: "not adoptable"}
	ErrNotAccepting         = &Error{Code: CodeNotAccepting, Message: "not accepting"}
	ErrNothingToAttach      = &Error{Code: CodeNothingToAttach, Message: "nothing to attach"}
	ErrNotLive              = &Error{Code: CodeNotLive, Message: "not live"}
	ErrResourceSetupFailed  = &Error{Code: CodeResourceSetupFailed, Message: "resource setup failed"}
	ErrResourceNotFound     = &Error{Code: CodeResourceNotFound, Message: "resource not found"}
	ErrResourceExhausted    = &Error{Code: CodeResourceExhausted, Message: "resource exhausted"}
	ErrSandboxDenied        = &Error{Code: CodeSandboxDenied, Message: "sandbox denied"}
	ErrSandboxUnavailable   = &Error{Code: CodeSandboxUnavailable, Message: "sandbox unavailable"}
	ErrContainerRunning     = &Error{Code: CodeContainerRunning, Message: "container running"}
	ErrContainerUnconfirmed = &Error{Code: CodeContainerUnconfirmed, Message: "container unconfirmed"}
	ErrRetryAfter           = &Error{Code: CodeRetryAfter, Message: "retry after"}
	ErrBadRequest           = &Error{Code: CodeBadRequest, Message: "bad request"}
	ErrUnreadableSchema     = &Error{Code: CodeUnreadableSchema, Message: "unreadable schema"}
	ErrGateFailed           = &Error{Code: CodeGateFailed, Message: "gate failed"}
	ErrTooLarge             = &Error{Code: CodeTooLarge, Message: "too large"}
	ErrStorageFull          = &Error{Code: CodeStorageFull, Message: "storage full"}

	ErrUnsupportedProtocolVersion = &Error{Code: CodeUnsupportedProtocolVersion, Message: "unsupported protocol version"}
	ErrReentrantCall              = &Error{Code: CodeReentrantCall, Message: "reentrant call"}
	ErrOverloaded                 = &Error{Code: CodeOverloaded, Message: "overloaded"}
	ErrCancelled                  = &Error{Code: CodeCancelled, Message: "cancelled"}
	ErrShuttingDown               = &Error{Code: CodeShuttingDown, Message: "shutting down"}
	ErrInternal                   = &Error{Code: CodeInternal, Message: "internal error"}
	ErrNotInitialized             = &Error{Code: CodeNotInitialized, Message: "not initialized"}

	ErrParse          = &Error{Code: CodeParse, Message: "parse error"}
	ErrMethodNotFound = &Error{Code: CodeMethodNotFound, Message: "method not found"}
	ErrInvalidParams  = &Error{Code: CodeInvalidParams, Message: "invalid params"}

	ErrTransport        = &Error{Code: CodeTransport, Message: "transport failure"}
	ErrNeedsNewerHost   = &Error{Code: CodeNeedsNewerHost, Message: "needs a newer Open Conduit"}
	ErrStartFailed      = &Error{Code: CodeStartFailed, Message: "start failed"}
	ErrHandshakeFailed  = &Error{Code: CodeHandshakeFailed, Message: "handshake failed"}
	ErrManifestMismatch = &Error{Code: CodeManifestMismatch, Message: "manifest mismatch"}
	ErrKVDowngrade      = &Error{Code: CodeKVDowngrade, Message: "kv downgrade"}
	ErrConfigureRefused = &Error{Code: CodeConfigureRefused, Message: "configure refused"}
	ErrUnavailable      = &Error{Code: CodeUnavailable, Message: "unavailable"}
	// ErrIncompatibleProtocol is discovery's, never a session's.
	ErrIncompatibleProtocol = &Error{Code: CodeIncompatibleProtocol, Message: "incompatible protocol"}
)

// JSON-RPC error codes used on the wire. Authored refusals all travel as
// RPCAuthored with data.code; the reserved codes carry the transport's own
// failures.
const (
	RPCParse          = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternal       = -32603
	RPCCancelled      = -32800
	RPCAuthored       = -32000
)

// CodeEntry is one row of the code table: the wire code, its sentinel, the
// JSON-RPC numeric code it travels under, and whether it ever crosses the
// wire (host diagnostics such as start_failed do not).
type CodeEntry struct {
	Code string
	Err  *Error
	// RPC is the JSON-RPC number it travels under (0: never crosses).
	RPC int
	// Wire says whether an extension or host may author it on the wire.
	Wire bool
	// Meaning is what the code tells the caller, for docs/protocol.md.
	Meaning string
	// RetryHint marks the one code that crosses as a retry hint.
	RetryHint bool
}

// codeTable is the one mapping between codes and sentinels. Codes(), Sentinel
// and RPCCode read it; a test walks it both ways.
var codeTable = []CodeEntry{
	{CodeInvalid, ErrInvalid, RPCAuthored, true, "the request or config is malformed; the message names the field", false},
	{CodeUnsupported, ErrUnsupported, RPCAuthored, true, "the method or control is catalogued but not served by this side", false},
	{CodeUnauthorized, ErrUnauthorized, RPCAuthored, true, "the caller may not do this (another extension's namespace, an unowned wait)", false},
	{CodeUndeclared, ErrUndeclared, RPCAuthored, true, "the manifest does not declare the surface or permission this method needs", false},
	{CodeNotFound, ErrNotFound, RPCAuthored, true, "no such record, or one outside the caller's scopes", false},
	{CodeConflict, ErrConflict, RPCAuthored, true, "a precondition failed (KV version, lease fence); re-read and retry", false},
	{CodeCausalLimit, ErrCausalLimit, RPCAuthored, true, "an Event chain exceeded its causal depth or rate limit", false},
	{CodeNotAdoptable, ErrNotAdoptable, RPCAuthored, true, "an executor cannot adopt the execution it was asked to recover", false},
	{CodeNotAccepting, ErrNotAccepting, RPCAuthored, true, "the executor is not accepting input now", false},
	{CodeNothingToAttach, ErrNothingToAttach, RPCAuthored, true, "there is no session to attach to", false},
	{CodeNotLive, ErrNotLive, RPCAuthored, true, "the execution has no live output", false},
	{CodeResourceSetupFailed, ErrResourceSetupFailed, RPCAuthored, true, "the resource was set up with errors (it is still returned)", false},
	{CodeResourceNotFound, ErrResourceNotFound, RPCAuthored, true, "the provider has no such resource", false},
	{CodeResourceExhausted, ErrResourceExhausted, RPCAuthored, true, "the provider is out of capacity; the message says what to free", false},
	{CodeSandboxDenied, ErrSandboxDenied, RPCAuthored, true, "a launch needs something outside the sandbox policy", false},
	{CodeSandboxUnavailable, ErrSandboxUnavailable, RPCAuthored, true, "the sandbox or container provider cannot run the launch", false},
	{CodeContainerRunning, ErrContainerRunning, RPCAuthored, true, "the container is still running", false},
	{CodeContainerUnconfirmed, ErrContainerUnconfirmed, RPCAuthored, true, "the container's state could not be confirmed", false},
	{CodeRetryAfter, ErrRetryAfter, RPCAuthored, true, "try again later; data.reset_at may say when", true},
	{CodeBadRequest, ErrBadRequest, RPCAuthored, true, "the input does not match the declared schema; the message names the field", false},
	{CodeUnreadableSchema, ErrUnreadableSchema, RPCAuthored, true, "a payload is not the current version of one of the writer's schemas", false},
	{CodeGateFailed, ErrGateFailed, RPCAuthored, true, "a gate timed out, crashed or failed; the call is refused", false},
	{CodeTooLarge, ErrTooLarge, RPCAuthored, true, "a message, value or payload is over its bound; nothing was sent or written", false},
	{CodeStorageFull, ErrStorageFull, RPCAuthored, true, "the host's disk is full; nothing was written, reads still work, retry once there is space", false},
	{CodeUnsupportedProtocolVersion, ErrUnsupportedProtocolVersion, RPCAuthored, true, "the two sides share no protocol version", false},
	{CodeReentrantCall, ErrReentrantCall, RPCAuthored, true, "a callback arrived while an in-transaction call to the extension was outstanding", false},
	{CodeOverloaded, ErrOverloaded, RPCAuthored, true, "the receiver already serves 64 requests; retry with backoff", false},
	{CodeCancelled, ErrCancelled, RPCCancelled, true, "the request was cancelled with $/cancel", false},
	{CodeShuttingDown, ErrShuttingDown, RPCAuthored, true, "the receiver is shutting down and takes no new requests", false},
	{CodeInternal, ErrInternal, RPCInternal, true, "an unauthored failure; the detail is in the receiver's own log", false},
	{CodeNotInitialized, ErrNotInitialized, RPCAuthored, true, "a request arrived before initialize succeeded", false},
	{CodeParse, ErrParse, RPCParse, true, "the message was not valid JSON", false},
	{CodeMethodNotFound, ErrMethodNotFound, RPCMethodNotFound, true, "the receiver does not know the method", false},
	{CodeInvalidParams, ErrInvalidParams, RPCInvalidParams, true, "the params could not be decoded at all", false},
	{CodeNeedsNewerHost, ErrNeedsNewerHost, RPCAuthored, true, "the manifest uses a field or permission this host does not know", false},
	{CodeTransport, ErrTransport, 0, false, "the connection broke (crash, closed pipe, protocol error); never authored", false},
	{CodeStartFailed, ErrStartFailed, 0, false, "the extension's command could not be started", false},
	{CodeHandshakeFailed, ErrHandshakeFailed, 0, false, "the extension exited or failed during initialize or configure", false},
	{CodeManifestMismatch, ErrManifestMismatch, 0, false, "initialize returned a manifest that differs from the file", false},
	{CodeKVDowngrade, ErrKVDowngrade, 0, false, "the manifest's kv_version is older than the recorded layout", false},
	{CodeConfigureRefused, ErrConfigureRefused, 0, false, "configure failed or registered names outside the extension's namespace", false},
	{CodeUnavailable, ErrUnavailable, 0, false, "the daemon or the package cannot serve this now (still starting, not running)", false},
	{CodeIncompatibleProtocol, ErrIncompatibleProtocol, 0, false, "the package shares no protocol version with this host; it is not started", false},
}

// Codes returns the code table, in a stable order.
func Codes() []CodeEntry {
	out := make([]CodeEntry, len(codeTable))
	copy(out, codeTable)
	return out
}

// codeIndex finds a code's row, built on first use.
var codeIndex = sync.OnceValue(func() map[string]CodeEntry {
	m := make(map[string]CodeEntry, len(codeTable))
	for _, e := range codeTable {
		m[e.Code] = e
	}
	return m
})

// LookupCode returns the code table's row for code.
func LookupCode(code string) (CodeEntry, bool) {
	e, ok := codeIndex()[code]
	return e, ok
}

// Sentinel returns the sentinel error for a wire code.
func Sentinel(code string) (*Error, bool) {
	e, ok := codeIndex()[code]
	return e.Err, ok
}

// RPCCode returns the JSON-RPC numeric code a wire code travels under: the
// reserved number for the transport's own codes, RPCAuthored for the rest.
func RPCCode(code string) int {
	if e, ok := codeIndex()[code]; ok && e.RPC != 0 {
		return e.RPC
	}
	return RPCAuthored
}

// CodeForRPC names the reserved JSON-RPC codes. It returns "" for
// RPCAuthored, whose code is in data.code.
func CodeForRPC(rpc int) string {
	switch rpc {
	case RPCParse, RPCInvalidRequest:
		return CodeParse
	case RPCMethodNotFound:
		return CodeMethodNotFound
	case RPCInvalidParams:
		return CodeInvalidParams
	case RPCInternal:
		return CodeInternal
	case RPCCancelled:
		return CodeCancelled
	}
	return ""
}

// ValidCode reports whether s has the shape of a wire code, [a-z][a-z0-9_]*.
func ValidCode(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
