package notes

import _ "embed"

// Certification is the package's certification fixture: a note written
// and one refused, a thread read, and one delivery to a notes entry, which
// becomes a notes.added Event. The binary prints it for open-conduit
// extension-run notes package-certification, and a package directory
// carries it as certification.json.
//
//go:embed certification.json
var Certification []byte
