package runner

import _ "embed"

// Certification is the package's certification fixture. It has no case:
// fixtures hold operation and ingress cases, and runner declares only an
// executor. The binary prints it for open-conduit extension-run runner
// package-certification, and a package directory carries it as
// certification.json.
//
//go:embed certification.json
var Certification []byte
