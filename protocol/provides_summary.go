package protocol

// Summary lists what p provides for an operator's one-line view: one
// "kind name" entry per declared surface ("executor shell", "operation
// notes.write", "ingress github"; an ingress extension type is "ingress",
// any other "extension") and each set flag as its bare manifest name
// ("webhooks", "start_gate"), in the order of Provides' fields and, within
// a field, the manifest's order. An empty Provides has no entries.
func (p Provides) Summary() []string {
	var s summary
	each(&s, "connection", p.Connections, func(c ConnectionType) string { return c.Type })
	for _, e := range p.Extensions {
		if e.Ingress {
			s.add("ingress", e.Type)
		} else {
			s.add("extension", e.Type)
		}
	}
	each(&s, "family", p.Families, func(f Family) string { return f.Name })
	s.flag(p.Webhooks, "webhooks")
	each(&s, "route", p.Routes, func(r Route) string { return r.Handler })
	each(&s, "work_kind", p.WorkKinds, func(k WorkKind) string { return k.Kind })
	each(&s, "recurrence", p.Recurrences, func(r Recurrence) string { return r.Kind })
	each(&s, "operation", p.Operations, func(o Operation) string { return o.Name })
	each(&s, "toolset", p.Toolsets, func(t Toolset) string { return t.Name })
	each(&s, "target", p.Targets, func(t string) string { return t })
	s.flag(p.DependencyFilter, "dependency_filter")
	s.flag(p.EntryGated, "entry_gated")
	s.flag(p.EntryNamed, "entry_named")
	s.flag(p.OperationGate, "operation_gate")
	s.flag(p.StartGate, "start_gate")
	each(&s, "executor", p.Executors, func(x Executor) string { return x.Name })
	each(&s, "resource", p.Resources, func(r Resource) string { return r.Type })
	each(&s, "sandbox", p.Sandboxes, func(t ProviderType) string { return t.Type })
	each(&s, "container", p.Containers, func(c ContainerType) string { return c.Type })
	each(&s, "tunnel", p.Tunnels, func(t ProviderType) string { return t.Type })
	each(&s, "task", p.Tasks, func(t Task) string { return t.Name })
	each(&s, "check", p.Checks, func(c Check) string { return c.Name })
	each(&s, "external_store", p.ExternalStores, func(e ExternalStore) string { return e.Name })
	each(&s, "schema", p.Schemas, func(sc Schema) string { return sc.Base })
	s.flag(p.Exporters, "exporters")
	s.flag(p.Render, "render")
	s.flag(p.Annotate, "annotate")
	s.flag(p.Actions, "actions")
	s.flag(p.Panels, "panels")
	s.flag(p.RunEnvironment, "run_environment")
	s.flag(p.SegmentEnd, "segment_end")
	s.flag(p.ConfigCandidate, "config_candidate")
	each(&s, "setup", p.Setup, func(st Setup) string { return st.Type })
	each(&s, "probe", p.Probes, func(pr Probe) string { return pr.Name })
	each(&s, "page", p.Pages, func(pg Page) string { return pg.ID })
	return s
}

// summary collects Summary's entries.
type summary []string

func (s *summary) add(kind, name string) { *s = append(*s, kind+" "+name) }

func (s *summary) flag(set bool, name string) {
	if set {
		*s = append(*s, name)
	}
}

// each adds one kind entry per element of xs, named by name.
func each[T any](s *summary, kind string, xs []T, name func(T) string) {
	for _, x := range xs {
		s.add(kind, name(x))
	}
}
