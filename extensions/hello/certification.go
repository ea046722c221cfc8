package hello

import _ "embed"

// Certification is the package's certification fixture: a case for
// hello.greet that greets and one it refuses. The binary prints it for
// open-conduit extension-run hello package-certification, and a package
// directory carries it as certification.json.
//
//go:embed certification.json
var Certification []byte
