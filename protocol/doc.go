// Package protocol is the executable definition of the Open Conduit extension
// protocol: the protocol versions and their negotiation, the package manifest
// (open-conduit-extension.json) with its strict parsing and validation, the
// method catalogue, the wire types of each method's params and result, and the
// error codes with their sentinel errors.
//
// It imports nothing of ours, so both sides of the wire (the host's session
// and the extension's sdk) share one definition.
package protocol
