package packages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// reference is a dotted name in backticks or double quotes, the way a
// playbook names an operation for an agent to call: `acme.greet` or
// "acme.greet".
var reference = regexp.MustCompile("`([a-z][a-z0-9_-]*(?:\\.[a-z0-9_-]+)+)`|\"([a-z][a-z0-9_-]*(?:\\.[a-z0-9_-]+)+)\"")

// playbookReferences reports every dotted name a playbook mentions in a
// namespace the package or Open Conduit owns that is neither an operation,
// a family or a schema the package declares, nor an operation Open Conduit
// registers, nor allowed by the caller. Names in other namespaces (config
// paths, file names, other packages) are left alone.
func (c *checker) playbookReferences() {
	known := c.knownNames()
	owned := map[string]bool{c.m.Name: true}
	for _, n := range protocol.ReservedNames {
		owned[n] = true
	}
	for _, rel := range c.playbooks {
		data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(rel)))
		if err != nil {
			c.rep.errorf(protocol.CodeInvalidPackage, rel, "the playbook %s cannot be read", rel)
			continue
		}
		c.scanPlaybook(rel, data, owned, known)
	}
}

// scanPlaybook reports each unknown name once per playbook, at its first
// line.
func (c *checker) scanPlaybook(rel string, data []byte, owned, known map[string]bool) {
	reported := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		for _, m := range reference.FindAllStringSubmatch(sc.Text(), -1) {
			name := m[1] + m[2]
			ns, _, _ := strings.Cut(name, ".")
			if !owned[ns] || known[name] || reported[name] {
				continue
			}
			reported[name] = true
			c.rep.errorf(protocol.CodeUnknownOperation, fmt.Sprintf("%s:%d", rel, line),
				"the playbook names %q, which is not an operation or family %s declares nor an operation Open Conduit registers", name, c.m.Name)
		}
	}
}

// knownNames are the names a playbook may mention: the package's
// operations, families and schemas (each version too), the operations
// Open Conduit registers, and the allowed names.
func (c *checker) knownNames() map[string]bool {
	known := map[string]bool{}
	p := c.m.Provides
	for _, o := range p.Operations {
		known[o.Name] = true
	}
	for _, f := range p.Families {
		known[f.Name] = true
	}
	for _, s := range p.Schemas {
		known[s.Base] = true
		for _, v := range s.Versions {
			known[fmt.Sprintf("%s.v%d", s.Base, v)] = true
		}
	}
	for _, n := range slices.Concat(protocol.BuiltinOperations, c.opts.Allow) {
		known[n] = true
	}
	return known
}
