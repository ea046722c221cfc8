package sdk

// Request is what the SDK knows about the call a handler serves. Every
// handler (an operation's, Configure, Validate, Migrate, a task, a check, a
// Method) gets one; fields that do not apply to a method are zero. It is
// made fresh for each call, so a handler may keep it.
type Request struct {
	// Host is the client for the host's methods: KV with precondition
	// batches, deliveries, artifacts and any other method by name.
	Host *Host
	// Authority is who an operation call is for, as the host built it; zero
	// for every other method.
	Authority Authority
	// RequestID is an operation call's idempotency key: a retry of the same
	// call carries the same one, so a handler whose effect is not naturally
	// idempotent derives its intent's identity from it. Empty elsewhere.
	RequestID string
	// Method is the wire method being served ("operation.call", "task.run",
	// "check.run", "configure", "validate", or a Method's name).
	Method string
	// Name is the operation, task or check being served; empty for the
	// methods that serve no named surface.
	Name string
	// Config is, for a check (check.run), the extension's read-only view
	// of the live configuration: its enabled scopes with its own entries,
	// their routes and bindings, and the connections its entries name,
	// without secrets. Nil for every other method, and when the host sent
	// none.
	Config *CheckConfig
}
