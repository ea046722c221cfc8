package packages

import (
	"fmt"
	"strings"

	"github.com/open-conduit/open-conduit/protocol"
)

// Inspection is what a package directory is, read offline: its manifest,
// what it provides, the permissions it asks for with what each allows, and
// the findings about its layout.
type Inspection struct {
	Dir string `json:"dir"`
	// Manifest is nil when it could not be decoded; it may break rules
	// (the report says which).
	Manifest *protocol.Manifest `json:"manifest,omitempty"`
	// HostRun marks a package this binary's own executable runs.
	HostRun     bool         `json:"host_run,omitzero"`
	Provides    []Provided   `json:"provides"`
	Permissions []Permission `json:"permissions"`
	// Report is the layout's findings: the manifest's rules, the name, the
	// command and the playbooks directory.
	Report Report `json:"report"`
}

// Provided is one thing a package registers.
type Provided struct {
	// Kind is what it is: operation, entry type, family, task, …
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

// Permission is one permission a package asks for and what it allows.
type Permission struct {
	Name string `json:"name"`
	// Allows is what the host lets the package do with it; empty for a
	// permission this Open Conduit does not know.
	Allows string `json:"allows,omitempty"`
}

// Inspect reads a package directory without starting it: what it is and
// its layout's findings (the checks Check starts with; not the names it
// may conflict with, the playbooks' contents or the certification fixture).
func Inspect(dir string, opts CheckOptions) Inspection {
	c := newChecker(dir, opts)
	c.layout()
	in := Inspection{Dir: c.dir, Manifest: c.m, Provides: []Provided{}, Permissions: []Permission{}, Report: c.report()}
	if c.m == nil {
		return in
	}
	in.HostRun = protocol.IsHostRun(c.m.Command, c.m.Name)
	in.Provides = provided(c.m)
	for _, p := range c.m.Permissions {
		in.Permissions = append(in.Permissions, Permission{Name: p, Allows: protocol.PermissionMeaning[p]})
	}
	return in
}

// provided lists what a manifest registers, in the order of its fields.
func provided(m *protocol.Manifest) []Provided {
	p := m.Provides
	out := []Provided{}
	add := func(kind, name, detail string) { out = append(out, Provided{Kind: kind, Name: name, Detail: detail}) }
	for _, c := range p.Connections {
		add("connection type", c.Type, "")
	}
	for _, e := range p.Extensions {
		detail := ""
		if e.Ingress {
			detail = "ingress: " + strings.Join(e.Families, ", ")
		}
		add("entry type", e.Type, detail)
	}
	for _, f := range p.Families {
		add("family", f.Name, f.Loss)
	}
	for _, r := range p.Routes {
		add("route handler", r.Handler, "")
	}
	for _, w := range p.WorkKinds {
		add("work kind", w.Kind, "")
	}
	for _, r := range p.Recurrences {
		add("recurrence", r.Kind, "")
	}
	for _, o := range p.Operations {
		add("operation", o.Name, strings.TrimSpace(o.Kind+": "+o.Summary))
	}
	for _, t := range p.Toolsets {
		add("toolset", t.Name, "")
	}
	for _, e := range p.Executors {
		add("executor", e.Name, "")
	}
	for _, r := range p.Resources {
		add("resource type", r.Type, "")
	}
	for _, s := range p.Sandboxes {
		add("sandbox type", s.Type, "")
	}
	for _, c := range p.Containers {
		add("container type", c.Type, "")
	}
	for _, t := range p.Tunnels {
		add("tunnel type", t.Type, "")
	}
	for _, t := range p.Tasks {
		add("task", t.Name, fmt.Sprintf("every %ds", t.IntervalSeconds))
	}
	for _, c := range p.Checks {
		add("doctor check", c.Name, "")
	}
	for _, s := range p.Schemas {
		add("schema", s.Base, fmt.Sprintf("versions %v", s.Versions))
	}
	for _, s := range p.Setup {
		add("setup", s.Type, "")
	}
	for _, pr := range p.Probes {
		add("probe", pr.Name, pr.Summary)
	}
	for _, pg := range p.Pages {
		add("page", pg.ID, pg.Title)
	}
	if p.Webhooks {
		add("surface", "webhooks", "")
	}
	return out
}
