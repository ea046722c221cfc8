// Package sdk is what an extension author imports to write an Open Conduit
// extension in Go; it is the only package an extension needs (sdk/sdktest
// for its tests). Start with New, register each surface (Operation with a
// typed Handler, EntryType, Configure, Validate, Migrate, Task, Check,
// Family, IngressType, Executor …), which also declares it in the manifest, and hand
// the extension to Main:
//
//	func main() {
//		sdk.Main(sdk.New("weather", sdk.Version("0.1.0")).
//			Operation("weather.forecast", sdk.Handler(forecast), sdk.Guidance("Call it before planning outdoors.")))
//	}
//
// Main serves the protocol on stdin and stdout when the daemon runs the
// binary, answers the package commands (package-manifest,
// package-certification, help, version), and tells a person who runs it in
// a terminal how to run it instead.
//
// Every handler gets a *Request: the Host (the client for the host's
// methods: KV with precondition batches, deliveries, artifacts, an
// execution's recovery metadata, a Wait's progress and any other method by
// name) and, for an operation call, who the call is for
// and its idempotency key. The wire types an author meets (Authority,
// Payload, Emission, Entry …) and the error sentinels are here as aliases
// of the protocol's. The package imports nothing of the host, so an
// extension binary stays small.
package sdk
