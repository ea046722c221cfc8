package extensions

import "github.com/open-conduit/open-conduit/extensions/hello"

// Certifications are the served packages' certification fixtures, by
// name: what extension-run NAME package-certification prints.
var Certifications = map[string][]byte{
	hello.Name: hello.Certification,
}
