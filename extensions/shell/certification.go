package shell

import _ "embed"

// Certification is the package's certification fixture. The binary prints
// it for open-conduit extension-run shell package-certification, and a
// package directory carries it as certification.json.
//
//go:embed certification.json
var Certification []byte
