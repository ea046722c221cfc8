package protocol

import (
	"slices"
	"sort"
	"sync"
)

// Direction says which side sends a method's requests.
type Direction string

// Directions. Both is only $/cancel.
const (
	HostToExtension Direction = "host_to_extension"
	ExtensionToHost Direction = "extension_to_host"
	Both            Direction = "both"
)

// Arrow is the direction as the seed's tables write it (H→E, E→H).
func (d Direction) Arrow() string {
	switch d {
	case HostToExtension:
		return "H→E"
	case ExtensionToHost:
		return "E→H"
	}
	return "both"
}

// Method is one wire method of the catalogue.
type Method struct {
	// Name is the JSON-RPC method name.
	Name string
	// Direction is who sends the request.
	Direction Direction
	// Surface names the manifest declaration that enables the method (see
	// Surfaces); "always" for methods every extension has.
	Surface string
	// Permission, when set, must also be declared in the manifest.
	Permission string
	// InTransaction marks the four bounded calls the host makes inside a
	// storage transaction (250 ms, no callbacks).
	InTransaction bool
	// Users are the shipped first-party users the seed names (GH GitHub,
	// SL Slack, SC schedule, …).
	Users []string
	// Summary is one line on what the method carries.
	Summary string
	// Served says whether this build of Open Conduit implements the method:
	// the daemon answers it (E→H) or calls it (H→E). An E→H method that is not
	// served is answered unsupported.
	Served bool
}

// Surface names. Each is a predicate over the manifest (Surfaces).
const (
	SurfaceAlways          = "always"
	SurfaceConfigTypes     = "config_types"
	SurfaceIngress         = "extensions.ingress"
	SurfaceWebhooks        = "webhooks"
	SurfaceFamilies        = "families"
	SurfaceRoutes          = "routes"
	SurfaceRouteSamples    = "routes.samples"
	SurfaceWorkKinds       = "work_kinds"
	SurfaceTrigger         = "work_kinds.trigger"
	SurfaceRecurrences     = "recurrences"
	SurfaceHandlerOps      = "operations.handler"
	SurfaceWaitOps         = "operations.wait"
	SurfaceEmitOps         = "operations.emit"
	SurfaceCommitOps       = "operations.commit"
	SurfaceDependency      = "dependency_filter"
	SurfaceOperationGate   = "operation_gate"
	SurfaceStartGate       = "start_gate"
	SurfaceRender          = "render"
	SurfaceTargets         = "targets"
	SurfaceSegmentEnd      = "segment_end"
	SurfaceExecutors       = "executors"
	SurfaceResume          = "executors.capabilities.resume"
	SurfaceInterrupt       = "executors.capabilities.interrupt"
	SurfaceInject          = "executors.capabilities.inject"
	SurfaceWorkspace       = "executors.capabilities.workspace"
	SurfaceExecSandbox     = "executors.capabilities.sandbox"
	SurfaceExecContainer   = "executors.capabilities.container"
	SurfaceStop            = "executors.controls.stop"
	SurfaceForget          = "executors.controls.forget"
	SurfaceAttach          = "executors.controls.attach"
	SurfaceContainerAttach = "executors.controls.container_attach"
	SurfaceLive            = "executors.controls.live"
	SurfaceLaunch          = "executors.controls.interactive_launch"
	SurfaceResources       = "resources"
	SurfaceSweep           = "resources.sweep"
	SurfaceSandboxes       = "sandboxes"
	SurfaceContainers      = "containers"
	SurfaceForward         = "containers.forward"
	SurfaceTunnels         = "tunnels"
	SurfaceTasks           = "tasks"
	SurfaceChecks          = "checks"
	SurfaceExporters       = "exporters"
	SurfaceProbes          = "probes"
	SurfaceConfigCandidate = "config_candidate"
	SurfaceRunEnvironment  = "run_environment"
	SurfaceAnnotate        = "annotate"
	SurfaceActions         = "actions"
	SurfacePanels          = "panels"
	SurfaceSetup           = "setup"
)

func anyExecutor(m *Manifest, f func(Executor) bool) bool {
	return slices.ContainsFunc(m.Provides.Executors, f)
}

func anyOperation(m *Manifest, f func(Operation) bool) bool {
	return slices.ContainsFunc(m.Provides.Operations, f)
}

func control(name string) func(*Manifest) bool {
	return func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return slices.Contains(e.Controls, name) })
	}
}

func opKind(kind string) func(*Manifest) bool {
	return func(m *Manifest) bool {
		return anyOperation(m, func(o Operation) bool { return o.Kind == kind })
	}
}

// Surfaces maps each surface name to the predicate that says whether a
// manifest declares it.
var Surfaces = map[string]func(*Manifest) bool{
	SurfaceAlways: func(*Manifest) bool { return true },
	SurfaceConfigTypes: func(m *Manifest) bool {
		p := m.Provides
		return len(p.Connections)+len(p.Extensions)+len(p.Routes)+len(p.Executors)+
			len(p.Resources)+len(p.Sandboxes)+len(p.Containers)+len(p.Tunnels) > 0
	},
	SurfaceIngress: func(m *Manifest) bool {
		return slices.ContainsFunc(m.Provides.Extensions, func(e ExtensionType) bool { return e.Ingress })
	},
	SurfaceWebhooks:  func(m *Manifest) bool { return m.Provides.Webhooks },
	SurfaceFamilies:  func(m *Manifest) bool { return len(m.Provides.Families) > 0 },
	SurfaceRoutes:    func(m *Manifest) bool { return len(m.Provides.Routes) > 0 },
	SurfaceWorkKinds: func(m *Manifest) bool { return len(m.Provides.WorkKinds) > 0 },
	SurfaceRouteSamples: func(m *Manifest) bool {
		return slices.ContainsFunc(m.Provides.Routes, func(r Route) bool { return r.Samples })
	},
	SurfaceTrigger: func(m *Manifest) bool {
		return slices.ContainsFunc(m.Provides.WorkKinds, func(w WorkKind) bool { return w.Trigger })
	},
	SurfaceRecurrences: func(m *Manifest) bool { return len(m.Provides.Recurrences) > 0 },
	SurfaceHandlerOps:  opKind(OperationHandler),
	SurfaceWaitOps:     opKind(OperationWait),
	SurfaceEmitOps:     opKind(OperationEmit),
	SurfaceCommitOps: func(m *Manifest) bool {
		return anyOperation(m, func(o Operation) bool { return o.Kind == OperationEmit && o.Commit })
	},
	SurfaceDependency:    func(m *Manifest) bool { return m.Provides.DependencyFilter },
	SurfaceOperationGate: func(m *Manifest) bool { return m.Provides.OperationGate },
	SurfaceStartGate:     func(m *Manifest) bool { return m.Provides.StartGate },
	SurfaceRender:        func(m *Manifest) bool { return m.Provides.Render },
	SurfaceTargets:       func(m *Manifest) bool { return len(m.Provides.Targets) > 0 },
	SurfaceSegmentEnd:    func(m *Manifest) bool { return m.Provides.SegmentEnd },
	SurfaceExecutors:     func(m *Manifest) bool { return len(m.Provides.Executors) > 0 },
	SurfaceResume: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Resume })
	},
	SurfaceInterrupt: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Interrupt })
	},
	SurfaceInject: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Inject })
	},
	SurfaceWorkspace: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Workspace })
	},
	SurfaceExecSandbox: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Sandbox })
	},
	SurfaceExecContainer: func(m *Manifest) bool {
		return anyExecutor(m, func(e Executor) bool { return e.Capabilities.Container })
	},
	SurfaceStop:            control(ControlStop),
	SurfaceForget:          control(ControlForget),
	SurfaceAttach:          control(ControlAttach),
	SurfaceContainerAttach: control(ControlContainerAttach),
	SurfaceLive:            control(ControlLive),
	SurfaceLaunch:          control(ControlInteractiveLaunch),
	SurfaceResources:       func(m *Manifest) bool { return len(m.Provides.Resources) > 0 },
	SurfaceSweep: func(m *Manifest) bool {
		return slices.ContainsFunc(m.Provides.Resources, func(r Resource) bool { return r.Sweep })
	},
	SurfaceSandboxes:  func(m *Manifest) bool { return len(m.Provides.Sandboxes) > 0 },
	SurfaceContainers: func(m *Manifest) bool { return len(m.Provides.Containers) > 0 },
	SurfaceForward: func(m *Manifest) bool {
		return slices.ContainsFunc(m.Provides.Containers, func(c ContainerType) bool { return c.Forward })
	},
	SurfaceTunnels:         func(m *Manifest) bool { return len(m.Provides.Tunnels) > 0 },
	SurfaceTasks:           func(m *Manifest) bool { return len(m.Provides.Tasks) > 0 },
	SurfaceChecks:          func(m *Manifest) bool { return len(m.Provides.Checks) > 0 },
	SurfaceExporters:       func(m *Manifest) bool { return m.Provides.Exporters },
	SurfaceProbes:          func(m *Manifest) bool { return len(m.Provides.Probes) > 0 },
	SurfaceConfigCandidate: func(m *Manifest) bool { return m.Provides.ConfigCandidate },
	SurfaceRunEnvironment:  func(m *Manifest) bool { return m.Provides.RunEnvironment },
	SurfaceAnnotate:        func(m *Manifest) bool { return m.Provides.Annotate },
	SurfaceActions:         func(m *Manifest) bool { return m.Provides.Actions },
	SurfacePanels:          func(m *Manifest) bool { return m.Provides.Panels },
	SurfaceSetup:           func(m *Manifest) bool { return len(m.Provides.Setup) > 0 },
}

// Shipped users, as the seed's inventory abbreviates them.
var (
	usersAll      = []string{"GH", "SL", "TR", "BB", "SC", "IS", "PH", "GIT", "SRT", "DK", "SSH", "NG", "CF", "SH", "CC", "CX", "HU"}
	usersIngress  = []string{"GH", "SL", "TR", "BB", "SC"}
	usersRouting  = []string{"GH", "SL", "TR", "BB", "SC", "IS"}
	usersExec     = []string{"SH", "CC", "CX"}
	usersKV       = []string{"GH", "SL", "TR", "BB", "SC", "IS", "CC"}
	usersState    = []string{"GH", "SL", "TR", "BB", "SC", "IS", "CC", "HU"}
	usersSecrets  = []string{"GH", "SL", "TR", "BB", "SC", "PH"}
	usersContainr = []string{"DK", "SSH"}
)

// catalogueRows is every wire method, in the seed's inventory order. It is
// written as plain values so the linker lays it out as data: no process
// spends time building it, and a binary carries about 13 KiB of table
// instead of about 55 KiB of code that built it.
var catalogueRows = [...]Method{
	// Lifecycle and transport.
	{Name: MethodInitialize, Direction: HostToExtension, Surface: SurfaceAlways, Users: usersAll, Summary: "negotiate the protocol version and return the manifest", Served: true},
	{Name: MethodConfigure, Direction: HostToExtension, Surface: SurfaceAlways, Users: usersAll, Summary: "send the config generation's entries; answers ingress sources and webhook paths", Served: true},
	{Name: MethodShutdown, Direction: HostToExtension, Surface: SurfaceAlways, Users: usersAll, Summary: "stop taking requests, finish or cancel in-flight work, then exit", Served: true},
	{Name: MethodCancel, Direction: Both, Surface: SurfaceAlways, Summary: "cancel an in-flight request by id (notification)", Users: usersAll, Served: true},

	// Config validation.
	{Name: MethodValidate, Direction: HostToExtension, Surface: SurfaceConfigTypes, Users: usersAll, Summary: "check a config object of a declared type; refusals say what to change, warnings too", Served: true},

	// Ingress.
	{Name: MethodWebhookHandle, Direction: HostToExtension, Surface: SurfaceWebhooks, Users: usersIngress, Summary: "verify and push one webhook request under a registered path", Served: true},
	{Name: MethodIngressPush, Direction: HostToExtension, Surface: SurfaceIngress, Users: usersIngress, Summary: "turn one delivery into observations and events", Served: true},
	{Name: MethodIngressReconcile, Direction: HostToExtension, Surface: SurfaceIngress, Users: usersIngress, Summary: "scan a source for one page of observations", Served: true},
	{Name: MethodIngressDeliver, Direction: ExtensionToHost, Surface: SurfaceIngress, Users: []string{"SL"}, Summary: "deliver from the extension's own receiver; answered after durable acceptance", Served: true},

	// Routing and Work kinds.
	{Name: MethodRouteMatch, Direction: HostToExtension, Surface: SurfaceRoutes, Users: usersRouting, Summary: "decide match or no match for an Event, free of side effects", Served: true},
	{Name: MethodRouteSamples, Direction: HostToExtension, Surface: SurfaceRouteSamples, Users: usersRouting, Summary: "named sample Events for a route trace", Served: true},
	{Name: MethodWorkKindTrigger, Direction: HostToExtension, Surface: SurfaceTrigger, InTransaction: true, Users: []string{"SC"}, Summary: "pick the trigger input of a new Work (in the start transaction)", Served: true},
	{Name: MethodRecurrenceNext, Direction: HostToExtension, Surface: SurfaceRecurrences, InTransaction: true, Users: []string{"SC", "IS"}, Summary: "the next occurrence of a calendar rule (in the fire-and-rearm transaction)", Served: true},
	{Name: MethodTimerArm, Direction: ExtensionToHost, Surface: SurfaceRecurrences, Users: []string{"SC", "IS"}, Summary: "arm a durable timer of a declared recurrence", Served: true},
	{Name: MethodTimerCancel, Direction: ExtensionToHost, Surface: SurfaceRecurrences, Users: []string{"SC", "IS"}, Summary: "cancel a timer the extension armed", Served: true},

	// Toolbelt operations.
	{Name: MethodOperationCall, Direction: HostToExtension, Surface: SurfaceHandlerOps, Users: []string{"GH", "SL", "TR", "BB", "IS", "HU"}, Summary: "run a handler operation with its authority and request_id", Served: true},
	{Name: MethodOperationWait, Direction: HostToExtension, Surface: SurfaceWaitOps, Users: []string{"GH"}, Summary: "plan a wait for a wait operation", Served: true},
	{Name: MethodOperationEmit, Direction: HostToExtension, Surface: SurfaceEmitOps, Users: []string{"IS"}, Summary: "plan an Event for an emit operation", Served: true},
	{Name: MethodEmitCommit, Direction: HostToExtension, Surface: SurfaceCommitOps, InTransaction: true, Users: []string{"IS"}, Summary: "records that commit with the accepted Event (in the emission transaction)", Served: true},
	{Name: MethodDependencyFilter, Direction: HostToExtension, Surface: SurfaceDependency, InTransaction: true, Users: []string{"GH"}, Summary: "does an Event satisfy a wait's dependency (in the subscription transaction)", Served: true},
	{Name: MethodOperationGate, Direction: HostToExtension, Surface: SurfaceOperationGate, Permission: PermissionOperationGate, Users: []string{"HU"}, Summary: "park or refuse another extension's toolbelt call", Served: true},
	{Name: MethodWorkAdmit, Direction: HostToExtension, Surface: SurfaceStartGate, Permission: PermissionStartGate, Users: []string{"HU"}, Summary: "admit or hold the first attempt of a Work", Served: true},
	{Name: MethodWorkSettleHold, Direction: ExtensionToHost, Surface: SurfaceStartGate, Permission: PermissionStartGate, Users: []string{"HU"}, Summary: "settle a hold the extension's start gate placed", Served: true},
	{Name: MethodWaitProgress, Direction: ExtensionToHost, Surface: SurfaceWaitOps, Users: []string{"GH"}, Summary: "set the progress line of a Wait the extension owns", Served: true},
	{Name: MethodWaitTarget, Direction: ExtensionToHost, Surface: SurfaceWaitOps, Users: []string{"GH"}, Summary: "resolve a <kind>:<name> wait target in the extension's scopes"},
	{Name: MethodTargetResolve, Direction: HostToExtension, Surface: SurfaceTargets, Users: []string{"SC"}, Summary: "resolve a wait target of a declared kind"},

	// Rendering, authority, segments.
	{Name: MethodEventRender, Direction: HostToExtension, Surface: SurfaceRender, Users: []string{"GH", "SL", "IS"}, Summary: "render an Event of the extension's own families for a prompt", Served: true},
	{Name: MethodEventRenderOwned, Direction: ExtensionToHost, Surface: SurfaceExecutors, Users: []string{"CC"}, Summary: "render an Event through the extension that owns its family"},
	{Name: MethodScopeAuthorize, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"GH"}, Summary: "may one of the extension's scopes read or file in another"},
	{Name: MethodSegmentEnded, Direction: HostToExtension, Surface: SurfaceSegmentEnd, Users: []string{"GH"}, Summary: "a container segment settled; revoke what was issued for it"},

	// Executors.
	{Name: MethodExecutorRun, Direction: HostToExtension, Surface: SurfaceExecutors, Users: usersExec, Summary: "start an execution of a Work", Served: true},
	{Name: MethodExecutorRecover, Direction: HostToExtension, Surface: SurfaceExecutors, Users: usersExec, Summary: "adopt an execution from its persisted recovery metadata", Served: true},
	{Name: MethodExecutorWait, Direction: HostToExtension, Surface: SurfaceExecutors, Users: usersExec, Summary: "observe an execution until it settles (cancel stops observing only)", Served: true},
	{Name: MethodExecutorResume, Direction: HostToExtension, Surface: SurfaceResume, Users: usersExec, Summary: "resume a waiting execution with new input"},
	{Name: MethodExecutorInterrupt, Direction: HostToExtension, Surface: SurfaceInterrupt, Users: usersExec, Summary: "interrupt a running execution", Served: true},
	{Name: MethodExecutorInject, Direction: HostToExtension, Surface: SurfaceInject, Users: usersExec, Summary: "inject input into a running execution", Served: true},
	{Name: MethodExecutorForget, Direction: HostToExtension, Surface: SurfaceForget, Users: usersExec, Summary: "forget an execution's local state", Served: true},
	{Name: MethodExecutorStop, Direction: HostToExtension, Surface: SurfaceStop, Users: []string{"SH", "CC"}, Summary: "stop an execution and answer physical-stop evidence", Served: true},
	{Name: MethodExecutorInteractiveLaunch, Direction: HostToExtension, Surface: SurfaceLaunch, Users: []string{"CC", "CX"}, Summary: "the argv and environment for an operator's interactive launch"},
	{Name: MethodExecutorAttach, Direction: HostToExtension, Surface: SurfaceAttach, Users: []string{"CC"}, Summary: "attach the operator to a running session"},
	{Name: MethodExecutorContainerAttach, Direction: HostToExtension, Surface: SurfaceContainerAttach, Users: []string{"CC"}, Summary: "attach to Work that ran in a container"},
	{Name: MethodExecutorLive, Direction: HostToExtension, Surface: SurfaceLive, Users: []string{"CC"}, Summary: "a running attempt's output so far", Served: true},
	{Name: MethodExecutionPersistRecovery, Direction: ExtensionToHost, Surface: SurfaceExecutors, Users: usersExec, Summary: "persist an execution's recovery metadata (lease-fenced)", Served: true},

	// Workspaces, sandboxes, containers.
	{Name: MethodResourceAcquire, Direction: ExtensionToHost, Surface: SurfaceWorkspace, Users: []string{"CC"}, Summary: "acquire the binding's workspace for a run"},
	{Name: MethodResourceLookup, Direction: ExtensionToHost, Surface: SurfaceWorkspace, Users: []string{"CC"}, Summary: "look up a run's workspace"},
	{Name: MethodProviderAcquire, Direction: HostToExtension, Surface: SurfaceResources, Users: []string{"GIT"}, Summary: "acquire a resource for an owner and mode"},
	{Name: MethodProviderLookup, Direction: HostToExtension, Surface: SurfaceResources, Users: []string{"GIT"}, Summary: "look up an acquired resource"},
	{Name: MethodProviderReconcile, Direction: HostToExtension, Surface: SurfaceResources, Users: []string{"GIT"}, Summary: "repair resources against the host's owner status"},
	{Name: MethodProviderSweep, Direction: HostToExtension, Surface: SurfaceSweep, Users: []string{"GIT"}, Summary: "remove spare resources no release covers"},
	{Name: MethodProviderOwnerStatus, Direction: ExtensionToHost, Surface: SurfaceResources, Users: []string{"GIT"}, Summary: "is an owner still live (during reconcile or sweep)"},
	{Name: MethodSandboxPlan, Direction: ExtensionToHost, Surface: SurfaceExecSandbox, Users: []string{"SH", "CC"}, Summary: "plan a launch in the run's sandbox"},
	{Name: MethodSandboxAdopt, Direction: ExtensionToHost, Surface: SurfaceExecSandbox, Users: []string{"SH", "CC"}, Summary: "adopt a launch under a pinned sandbox plan"},
	{Name: MethodContainerLaunch, Direction: ExtensionToHost, Surface: SurfaceExecContainer, Users: []string{"SH", "CC"}, Summary: "launch in the run's container"},
	{Name: MethodContainerAdopt, Direction: ExtensionToHost, Surface: SurfaceExecContainer, Users: []string{"SH", "CC"}, Summary: "adopt a container launch after a restart"},
	{Name: MethodSandboxProviderPlan, Direction: HostToExtension, Surface: SurfaceSandboxes, Users: []string{"SRT"}, Summary: "plan a sandboxed launch for its needs"},
	{Name: MethodSandboxProviderAdopt, Direction: HostToExtension, Surface: SurfaceSandboxes, Users: []string{"SRT"}, Summary: "adopt a segment under a pinned plan"},
	{Name: MethodContainerProviderPlan, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "plan a container for a launch"},
	{Name: MethodContainerProviderCreate, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "create the planned container"},
	{Name: MethodContainerProviderSignal, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "signal a container's process"},
	{Name: MethodContainerProviderStop, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "stop a container"},
	{Name: MethodContainerProviderInspect, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "inspect one container"},
	{Name: MethodContainerProviderList, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "list the provider's containers of this host"},
	{Name: MethodContainerProviderRemove, Direction: HostToExtension, Surface: SurfaceContainers, Users: usersContainr, Summary: "remove a container"},
	{Name: MethodContainerProviderForward, Direction: HostToExtension, Surface: SurfaceForward, Users: usersContainr, Summary: "the address the toolbelt is served on for a container"},

	// Tunnels.
	{Name: MethodTunnelRun, Direction: HostToExtension, Surface: SurfaceTunnels, Users: []string{"NG", "CF"}, Summary: "keep the webhook listener exposed (held open for the daemon's life)"},
	{Name: MethodTunnelURL, Direction: ExtensionToHost, Surface: SurfaceTunnels, Users: []string{"NG", "CF"}, Summary: "publish the tunnel's current public URL"},

	// Storage and state.
	{Name: MethodKVGet, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersKV, Summary: "read one key with its version", Served: true},
	{Name: MethodKVList, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersKV, Summary: "list keys of a namespace, with versions", Served: true},
	{Name: MethodKVCommit, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersKV, Summary: "apply preconditions, puts, deletes and emissions atomically", Served: true},
	{Name: MethodStateWork, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "one Work in the extension's scopes"},
	{Name: MethodStateWorks, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "Work in the extension's scopes"},
	{Name: MethodStateExecutions, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "a Work's executions"},
	{Name: MethodStateWaits, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"HU"}, Summary: "a Work's Waits"},
	{Name: MethodStateEvent, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "one Event in the extension's scopes", Served: true},
	{Name: MethodStateEvents, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "a page of Events in the extension's scopes (cursor)", Served: true},
	{Name: MethodStateWorkEvents, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "a page of one Work's Events", Served: true},
	{Name: MethodStateSequence, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"HU"}, Summary: "the log's latest sequence", Served: true},
	{Name: MethodStateScopes, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "the scopes that use the extension", Served: true},
	{Name: MethodStateScope, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersState, Summary: "one scope that uses the extension", Served: true},
	{Name: MethodStateTimers, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"SC", "IS"}, Summary: "the extension's timers"},
	{Name: MethodEventAccept, Direction: ExtensionToHost, Surface: SurfaceFamilies, Users: []string{"GH", "SC", "IS"}, Summary: "accept a derived Event of an own family with KV records", Served: true},
	{Name: MethodWorkCancel, Direction: ExtensionToHost, Surface: SurfaceWorkKinds, Users: []string{"IS"}, Summary: "cancel Work of an own kind", Served: true},
	{Name: MethodArtifactCreate, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"SH", "CC"}, Summary: "open an artifact writer", Served: true},
	{Name: MethodArtifactWrite, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"SH", "CC"}, Summary: "write one acknowledged chunk (at most 256 KiB; up to `artifact_window` in flight)", Served: true},
	{Name: MethodArtifactCommit, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"SH", "CC"}, Summary: "commit an artifact", Served: true},
	{Name: MethodArtifactAbort, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: []string{"SH", "CC"}, Summary: "abandon an artifact writer", Served: true},
	{Name: MethodSecretResolve, Direction: ExtensionToHost, Surface: SurfaceAlways, Users: usersSecrets, Summary: "resolve secret names bound to the extension's entries", Served: true},

	// Background passes, doctor, telemetry.
	{Name: MethodTaskRun, Direction: HostToExtension, Surface: SurfaceTasks, Users: usersKV, Summary: "run one pass of a declared task", Served: true},
	{Name: MethodCheckRun, Direction: HostToExtension, Surface: SurfaceChecks, Users: usersAll, Summary: "run a declared doctor check on the configuration view", Served: true},
	{Name: MethodTelemetryExport, Direction: HostToExtension, Surface: SurfaceExporters, Users: []string{"PH", "IS"}, Summary: "export a telemetry batch (with a deadline)"},
	{Name: MethodTelemetrySink, Direction: HostToExtension, Surface: SurfaceAlways, Permission: PermissionTelemetrySink, Users: []string{"IS", "PH"}, Summary: "receive every named telemetry event"},
	{Name: MethodTelemetryCapture, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionTelemetryCapture, Users: []string{"IS", "PH"}, Summary: "record a named telemetry event"},

	// Setup probes and the config host.
	{Name: MethodProbeList, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionProbes, Users: []string{"GH", "CC"}, Summary: "list the setup probes the host offers"},
	{Name: MethodProbeRun, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionProbes, Users: []string{"GH", "CC"}, Summary: "run one read-only setup probe (30 s)"},
	{Name: MethodProbeServe, Direction: HostToExtension, Surface: SurfaceProbes, Users: []string{"GH", "CC"}, Summary: "run one of the extension's own probes"},
	{Name: MethodConfigBase, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionConfigRead, Users: []string{"GH"}, Summary: "the committed generation and a handle on its redacted text"},
	{Name: MethodConfigEdit, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionConfigRead, Users: []string{"GH"}, Summary: "one RFC 6902 edit against a handle, answered as a new handle"},
	{Name: MethodConfigValidate, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionConfigRead, Users: []string{"GH"}, Summary: "validate a candidate handle"},
	{Name: MethodConfigTrace, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionConfigRead, Users: []string{"GH"}, Summary: "trace routes against a candidate handle"},
	{Name: MethodConfigCandidate, Direction: HostToExtension, Surface: SurfaceConfigCandidate, Permission: PermissionConfigRead, Users: []string{"GH"}, Summary: "the config changes a Work proposes"},

	// Run environment, annotations, actions, panels, setup.
	{Name: MethodRunEnvironment, Direction: HostToExtension, Surface: SurfaceRunEnvironment, Users: []string{"GH"}, Summary: "an environment layer for a run of Work", Served: true},
	{Name: MethodWorkAnnotate, Direction: HostToExtension, Surface: SurfaceAnnotate, Users: []string{"GH"}, Summary: "annotate Work in the extension's scopes"},
	{Name: MethodWorkActions, Direction: HostToExtension, Surface: SurfaceActions, Users: []string{"GH", "SL", "HU"}, Summary: "the actions offered on a target"},
	{Name: MethodWorkAct, Direction: HostToExtension, Surface: SurfaceActions, Users: []string{"GH", "SL", "HU"}, Summary: "invoke an action for an operator"},
	{Name: MethodActionSubmit, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionActionSubmit, Users: []string{"GH", "SL"}, Summary: "invoke an action for a person the extension identified"},
	{Name: MethodActionList, Direction: ExtensionToHost, Surface: SurfaceAlways, Permission: PermissionActionSubmit, Users: []string{"GH", "SL"}, Summary: "list the actions offered on a target"},
	{Name: MethodViewRender, Direction: HostToExtension, Surface: SurfacePanels, Users: []string{"HU"}, Summary: "a panel on a scope or Work page"},
	{Name: MethodSetupRun, Direction: HostToExtension, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "run a setup flow with setup.* callbacks"},
	{Name: MethodSetupPrompt, Direction: ExtensionToHost, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "ask the operator during setup"},
	{Name: MethodSetupBrowser, Direction: ExtensionToHost, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "open a browser during setup"},
	{Name: MethodSetupSecret, Direction: ExtensionToHost, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "store a secret during setup"},
	{Name: MethodSetupLookPath, Direction: ExtensionToHost, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "find a program on the operator's PATH"},
	{Name: MethodSetupExec, Direction: ExtensionToHost, Surface: SurfaceSetup, Users: []string{"GH", "SL", "TR"}, Summary: "run a program for the operator during setup"},
}

// catalogue is every wire method, in the seed's inventory order.
func catalogue() []Method { return catalogueRows[:] }

// catalogueIndex finds a method by name. It is built on first use, so a
// process that never looks a method up (an extension) does not build it.
var catalogueIndex = sync.OnceValue(func() map[string]*Method {
	c := catalogue()
	m := make(map[string]*Method, len(c))
	for i := range c {
		m[c[i].Name] = &c[i]
	}
	return m
})

// Catalogue returns every wire method, sorted by name.
func Catalogue() []Method {
	out := slices.Clone(catalogue())
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the catalogued method named name.
func Lookup(name string) (Method, bool) {
	m, ok := catalogueIndex()[name]
	if !ok {
		return Method{}, false
	}
	return *m, true
}

// Enabled reports whether the manifest enables method: it is catalogued, the
// manifest declares its surface, and any permission it needs. The host
// neither calls (H→E) nor serves (E→H) a method that is not enabled.
func (m *Manifest) Enabled(method string) bool {
	def, ok := catalogueIndex()[method]
	if !ok {
		return false
	}
	if def.Permission != "" && !m.HasPermission(def.Permission) {
		return false
	}
	pred := Surfaces[def.Surface]
	return pred != nil && pred(m)
}

// EnabledMethods lists the methods the manifest enables in direction d,
// sorted.
func (m *Manifest) EnabledMethods(d Direction) []string {
	var out []string
	for _, def := range catalogue() {
		if (def.Direction == d || def.Direction == Both) && m.Enabled(def.Name) {
			out = append(out, def.Name)
		}
	}
	sort.Strings(out)
	return out
}
