package webhook

import _ "embed"

// Certification is the package's certification fixture: one signed JSON
// delivery to a webhook entry, which becomes a webhook.received Event. The
// binary prints it for open-conduit extension-run webhook
// package-certification, and a package directory carries it as
// certification.json.
//
//go:embed certification.json
var Certification []byte
