package hostsuite

import (
	"github.com/open-conduit/open-conduit/protocol"
)

// methodChecks are the checks of the answer to every catalogued
// extension-to-host method.
var methodChecks = []check{
	{"EveryMethodAnswersAsTheCatalogueSays", everyMethodAnswers, MaximalSetup},
	{"MethodsNotEnabledAreUndeclared", methodsNotEnabledAreUndeclared, nil},
}

// MaximalSetup is DefaultSetup with a manifest that enables every
// extension-to-host method: every surface, every permission.
func MaximalSetup() Setup {
	s := DefaultSetup()
	s.Manifest = Maximal()
	return s
}

// Maximal is Manifest with every surface and every permission declared.
func Maximal() *protocol.Manifest {
	m := Manifest()
	m.Permissions = append([]string(nil), protocol.KnownPermissions...)
	p := &m.Provides
	p.Connections = []protocol.ConnectionType{{Type: Extension}}
	p.Webhooks = true
	p.Routes = []protocol.Route{{Handler: Extension, Samples: true}}
	p.WorkKinds = []protocol.WorkKind{{Kind: Extension + ".job", Trigger: true}}
	p.Recurrences = []protocol.Recurrence{{Kind: Extension + ".daily"}}
	p.Operations = []protocol.Operation{
		{Name: Extension + ".read", Kind: protocol.OperationHandler},
		{Name: Extension + ".wait", Kind: protocol.OperationWait},
		{Name: Extension + ".emit", Kind: protocol.OperationEmit, Commit: true},
	}
	p.Targets = []string{"job"}
	p.DependencyFilter, p.OperationGate, p.StartGate = true, true, true
	p.Render, p.SegmentEnd, p.Exporters = true, true, true
	p.ConfigCandidate, p.RunEnvironment, p.Annotate, p.Actions, p.Panels = true, true, true, true, true
	p.Executors = []protocol.Executor{{
		Name:         Extension,
		Capabilities: protocol.Capabilities{Interrupt: true, Inject: true, Resume: true, Workspace: true, Sandbox: true, Container: true},
		Controls: []string{protocol.ControlStop, protocol.ControlForget, protocol.ControlAttach,
			protocol.ControlContainerAttach, protocol.ControlLive, protocol.ControlInteractiveLaunch},
	}}
	p.Resources = []protocol.Resource{{Type: Extension + "-ws", Sweep: true}}
	p.Sandboxes = []protocol.ProviderType{{Type: Extension + "-box"}}
	p.Containers = []protocol.ContainerType{{Type: Extension + "-ctr", Forward: true}}
	p.Tunnels = []protocol.ProviderType{{Type: Extension + "-tunnel"}}
	p.Tasks = []protocol.Task{{Name: Extension + "-sync", IntervalSeconds: 60}}
	p.Checks = []protocol.Check{{Name: Extension + "-ok"}}
	p.Probes = []protocol.Probe{{Name: Extension + ".status"}}
	p.Setup = []protocol.Setup{{Type: Extension}}
	return m
}

// servedAnswers is what each method the catalogue marks served answers
// empty params ({}) with, in every host: "" is a result. A method marked
// served with no row fails the suite, so serving a new method means saying
// here what it answers.
var servedAnswers = map[string]*protocol.Error{
	protocol.MethodKVGet:                    protocol.ErrUnauthorized, // no namespace is the extension's
	protocol.MethodKVList:                   protocol.ErrUnauthorized,
	protocol.MethodKVCommit:                 nil, // an empty batch applies
	protocol.MethodStateSequence:            nil,
	protocol.MethodStateEvent:               protocol.ErrNotFound,
	protocol.MethodStateEvents:              nil,
	protocol.MethodStateWorkEvents:          nil,
	protocol.MethodStateScopes:              nil,
	protocol.MethodStateScope:               protocol.ErrNotFound,
	protocol.MethodEventAccept:              protocol.ErrInvalid, // no parent
	protocol.MethodSecretResolve:            protocol.ErrUnauthorized,
	protocol.MethodTimerArm:                 protocol.ErrInvalid, // no id
	protocol.MethodTimerCancel:              protocol.ErrInvalid,
	protocol.MethodIngressDeliver:           protocol.ErrUnauthorized, // no source is the extension's
	protocol.MethodWorkCancel:               protocol.ErrInvalid,      // no work_id
	protocol.MethodArtifactCreate:           protocol.ErrInvalid,      // no name
	protocol.MethodArtifactWrite:            protocol.ErrNotFound,     // no open artifact
	protocol.MethodArtifactCommit:           protocol.ErrNotFound,
	protocol.MethodArtifactAbort:            nil,                  // aborting what is not open changes nothing
	protocol.MethodExecutionPersistRecovery: protocol.ErrNotFound, // no execution of the extension's
	protocol.MethodWaitProgress:             protocol.ErrNotFound, // no Work with an active Wait
	protocol.MethodWorkSettleHold:           protocol.ErrInvalid,  // no work_id
}

// extensionToHost is every catalogued extension-to-host method.
func extensionToHost() []protocol.Method {
	var out []protocol.Method
	for _, def := range protocol.Catalogue() {
		if def.Direction == protocol.ExtensionToHost {
			out = append(out, def)
		}
	}
	return out
}

// everyMethodAnswers: with every method enabled, a method the catalogue
// marks served reaches its handler, which answers as servedAnswers says;
// every other answers unsupported before any handler runs.
func everyMethodAnswers(x *ext) {
	m := x.setup.Manifest
	for _, def := range extensionToHost() {
		if !m.Enabled(def.Name) {
			x.Fatalf("the maximal manifest does not enable %s: declare its surface or permission in Maximal", def.Name)
		}
		err := x.conn.Call(x.ctx, def.Name, map[string]any{}, nil)
		if !def.Served {
			x.wantCode(def.Name+" (not served)", err, protocol.ErrUnsupported)
			continue
		}
		want, ok := servedAnswers[def.Name]
		if !ok {
			x.Errorf("%s is marked served but the suite does not say what it answers: add it to servedAnswers", def.Name)
			continue
		}
		if want == nil {
			if err != nil {
				x.Errorf("%s {}: answered %v, want a result", def.Name, err)
			}
			continue
		}
		x.wantCode(def.Name+" {}", err, want)
	}
}

// methodsNotEnabledAreUndeclared: with the suite's small manifest, every
// method it does not enable is undeclared, served or not, and every method
// it enables is not.
func methodsNotEnabledAreUndeclared(x *ext) {
	m := x.setup.Manifest
	undeclared := 0
	for _, def := range extensionToHost() {
		err := x.conn.Call(x.ctx, def.Name, map[string]any{}, nil)
		if m.Enabled(def.Name) {
			if protocol.CodeOf(err) == protocol.ErrUndeclared.Code {
				x.Errorf("%s is enabled by the manifest but answered %v", def.Name, err)
			}
			continue
		}
		undeclared++
		x.wantCode(def.Name+" (not enabled)", err, protocol.ErrUndeclared)
	}
	if undeclared == 0 {
		x.Fatalf("the suite's manifest enables every method, so no undeclared answer was checked")
	}
}
