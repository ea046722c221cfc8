// Package sdk is what an extension author imports to write an Open Conduit
// extension in Go. Start with New, register each surface (Operation with a
// typed Handler, Task, Check, Family, IngressType …), which also declares
// it in the manifest, and call Serve:
//
//	ext := sdk.New("weather", sdk.Version("0.1.0")).
//		Operation("weather.forecast", sdk.Handler(forecast), sdk.Guidance("Call it before planning outdoors."))
//	if sdk.PackageCommand(os.Args[1:], ext.Manifest, nil, os.Stdout) {
//		return
//	}
//	if err := sdk.Serve(ext); err != nil {
//		os.Exit(1)
//	}
//
// Inside a handler, HostFrom(ctx) is the client for the host's methods: KV
// with precondition batches, deliveries, artifacts and any other method by
// name. The package imports nothing of the host, so an extension binary stays
// small.
package sdk
