package packages

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/open-conduit/open-conduit/protocol"
)

// certificationAt is a finding's path at a member of certification.json.
func certificationAt(pointer string) string {
	if pointer == "" {
		return protocol.CertificationFileName
	}
	return protocol.CertificationFileName + "#" + pointer
}

// certification checks certification.json: present (a warning when not),
// well formed, and, for an inline fixture, fitting the manifest. A fixture a
// command prints is left to certification, which runs the command.
func (c *checker) certification() {
	data, err := os.ReadFile(filepath.Join(c.dir, protocol.CertificationFileName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.rep.warnf(protocol.CodeNoCertification, protocol.CertificationFileName,
			"the package has no %s, so certification has no case to run", protocol.CertificationFileName)
		return
	case err != nil:
		c.rep.errorf(protocol.CodeInvalidCertification, protocol.CertificationFileName, "%s cannot be read", protocol.CertificationFileName)
		return
	}
	f, err := protocol.ParseCertification(data)
	var ce *protocol.CertificationError
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			c.rep.errorf(protocol.CodeInvalidCertification, certificationAt(p.Path), "%s [rule %s]", p.Message, p.Rule)
		}
		return
	}
	if f.Fixture != nil && c.m != nil {
		c.fixtureCases(f.Fixture)
	}
}

// fixtureCases checks an inline fixture against the manifest: an ingress
// case for every type that takes ingress, and no case naming something the
// package does not declare.
func (c *checker) fixtureCases(fx *protocol.Fixture) {
	p := c.m.Provides
	for i, oc := range fx.Operations {
		at := certificationAt(protocol.Pointer("fixture", "operations", i, "operation"))
		j := slices.IndexFunc(p.Operations, func(o protocol.Operation) bool { return o.Name == oc.Operation })
		switch {
		case j < 0:
			c.rep.errorf(protocol.CodeFixtureMissingCase, at,
				"the case calls %q, which %s does not declare: name one of its handler operations", oc.Operation, c.m.Name)
		case p.Operations[j].Kind != protocol.OperationHandler && !c.broken(protocol.Pointer("provides", "operations", j, "kind")):
			c.rep.errorf(protocol.CodeFixtureMissingCase, at,
				"the case calls %q, a %s operation: a case calls a handler operation", oc.Operation, p.Operations[j].Kind)
		}
	}
	ingress := map[string]protocol.ExtensionType{}
	for _, e := range p.Extensions {
		if e.Ingress {
			ingress[e.Type] = e
		}
	}
	covered := map[string]bool{}
	for i, ic := range fx.Ingress {
		at := protocol.Pointer("fixture", "ingress", i)
		t, ok := ingress[ic.Type]
		switch {
		case !ok:
			c.rep.errorf(protocol.CodeFixtureMissingCase, certificationAt(at+"/type"),
				"the case is for type %q, which is not a type %s declares with ingress", ic.Type, c.m.Name)
		case ic.Family != "" && !slices.Contains(t.Families, ic.Family):
			c.rep.errorf(protocol.CodeFixtureMissingCase, certificationAt(at+"/family"),
				"the case expects family %q, which type %q does not list: name one of its families", ic.Family, ic.Type)
		}
		covered[ic.Type] = true
	}
	for _, e := range p.Extensions {
		if e.Ingress && !covered[e.Type] {
			c.rep.errorf(protocol.CodeFixtureMissingCase, certificationAt("/fixture/ingress"),
				"type %q takes ingress but the fixture has no ingress case for it: add one with a delivery", e.Type)
		}
	}
}
