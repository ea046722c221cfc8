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

func h2e(name, surface, summary string, users ...string) Method {
	return Method{Name: name, Direction: HostToExtension, Surface: surface, Summary: summary, Users: users}
}

func e2h(name, surface, summary string, users ...string) Method {
	return Method{Name: name, Direction: ExtensionToHost, Surface: surface, Summary: summary, Users: users}
}

func gated(m Method, permission string) Method { m.Permission = permission; return m }
func inTx(m Method) Method                     { m.InTransaction = true; return m }
func served(m Method) Method                   { m.Served = true; return m }

// catalogue is every wire method, in the seed's inventory order. It is
// built on first use: an extension never reads it.
var catalogue = sync.OnceValue(func() []Method {
	return []Method{
		// Lifecycle and transport.
		served(h2e(MethodInitialize, SurfaceAlways, "negotiate the protocol version and return the manifest", usersAll...)),
		served(h2e(MethodConfigure, SurfaceAlways, "send the config generation's entries; answers ingress sources and webhook paths", usersAll...)),
		served(h2e(MethodShutdown, SurfaceAlways, "stop taking requests, finish or cancel in-flight work, then exit", usersAll...)),
		served(Method{Name: MethodCancel, Direction: Both, Surface: SurfaceAlways, Summary: "cancel an in-flight request by id (notification)", Users: usersAll}),

		// Config validation.
		served(h2e(MethodValidate, SurfaceConfigTypes, "check a config object of a declared type; refusals say what to change, warnings too", usersAll...)),

		// Ingress.
		served(h2e(MethodWebhookHandle, SurfaceWebhooks, "verify and push one webhook request under a registered path", usersIngress...)),
		served(h2e(MethodIngressPush, SurfaceIngress, "turn one delivery into observations and events", usersIngress...)),
		served(h2e(MethodIngressReconcile, SurfaceIngress, "scan a source for one page of observations", usersIngress...)),
		served(e2h(MethodIngressDeliver, SurfaceIngress, "deliver from the extension's own receiver; answered after durable acceptance", "SL")),

		// Routing and Work kinds.
		served(h2e(MethodRouteMatch, SurfaceRoutes, "decide match or no match for an Event, free of side effects", usersRouting...)),
		served(h2e(MethodRouteSamples, SurfaceRouteSamples, "named sample Events for a route trace", usersRouting...)),
		served(inTx(h2e(MethodWorkKindTrigger, SurfaceTrigger, "pick the trigger input of a new Work (in the start transaction)", "SC"))),
		served(inTx(h2e(MethodRecurrenceNext, SurfaceRecurrences, "the next occurrence of a calendar rule (in the fire-and-rearm transaction)", "SC", "IS"))),
		served(e2h(MethodTimerArm, SurfaceRecurrences, "arm a durable timer of a declared recurrence", "SC", "IS")),
		served(e2h(MethodTimerCancel, SurfaceRecurrences, "cancel a timer the extension armed", "SC", "IS")),

		// Toolbelt operations.
		served(h2e(MethodOperationCall, SurfaceHandlerOps, "run a handler operation with its authority and request_id", "GH", "SL", "TR", "BB", "IS", "HU")),
		served(h2e(MethodOperationWait, SurfaceWaitOps, "plan a wait for a wait operation", "GH")),
		served(h2e(MethodOperationEmit, SurfaceEmitOps, "plan an Event for an emit operation", "IS")),
		served(inTx(h2e(MethodEmitCommit, SurfaceCommitOps, "records that commit with the accepted Event (in the emission transaction)", "IS"))),
		served(inTx(h2e(MethodDependencyFilter, SurfaceDependency, "does an Event satisfy a wait's dependency (in the subscription transaction)", "GH"))),
		served(gated(h2e(MethodOperationGate, SurfaceOperationGate, "park or refuse another extension's toolbelt call", "HU"), PermissionOperationGate)),
		served(gated(h2e(MethodWorkAdmit, SurfaceStartGate, "admit or hold the first attempt of a Work", "HU"), PermissionStartGate)),
		served(gated(e2h(MethodWorkSettleHold, SurfaceStartGate, "settle a hold the extension's start gate placed", "HU"), PermissionStartGate)),
		served(e2h(MethodWaitProgress, SurfaceWaitOps, "set the progress line of a Wait the extension owns", "GH")),
		e2h(MethodWaitTarget, SurfaceWaitOps, "resolve a <kind>:<name> wait target in the extension's scopes", "GH"),
		h2e(MethodTargetResolve, SurfaceTargets, "resolve a wait target of a declared kind", "SC"),

		// Rendering, authority, segments.
		served(h2e(MethodEventRender, SurfaceRender, "render an Event of the extension's own families for a prompt", "GH", "SL", "IS")),
		e2h(MethodEventRenderOwned, SurfaceExecutors, "render an Event through the extension that owns its family", "CC"),
		e2h(MethodScopeAuthorize, SurfaceAlways, "may one of the extension's scopes read or file in another", "GH"),
		h2e(MethodSegmentEnded, SurfaceSegmentEnd, "a container segment settled; revoke what was issued for it", "GH"),

		// Executors.
		served(h2e(MethodExecutorRun, SurfaceExecutors, "start an execution of a Work", usersExec...)),
		served(h2e(MethodExecutorRecover, SurfaceExecutors, "adopt an execution from its persisted recovery metadata", usersExec...)),
		served(h2e(MethodExecutorWait, SurfaceExecutors, "observe an execution until it settles (cancel stops observing only)", usersExec...)),
		h2e(MethodExecutorResume, SurfaceResume, "resume a waiting execution with new input", usersExec...),
		served(h2e(MethodExecutorInterrupt, SurfaceInterrupt, "interrupt a running execution", usersExec...)),
		served(h2e(MethodExecutorInject, SurfaceInject, "inject input into a running execution", usersExec...)),
		served(h2e(MethodExecutorForget, SurfaceForget, "forget an execution's local state", usersExec...)),
		served(h2e(MethodExecutorStop, SurfaceStop, "stop an execution and answer physical-stop evidence", "SH", "CC")),
		h2e(MethodExecutorInteractiveLaunch, SurfaceLaunch, "the argv and environment for an operator's interactive launch", "CC", "CX"),
		h2e(MethodExecutorAttach, SurfaceAttach, "attach the operator to a running session", "CC"),
		h2e(MethodExecutorContainerAttach, SurfaceContainerAttach, "attach to Work that ran in a container", "CC"),
		served(h2e(MethodExecutorLive, SurfaceLive, "a running attempt's output so far", "CC")),
		served(e2h(MethodExecutionPersistRecovery, SurfaceExecutors, "persist an execution's recovery metadata (lease-fenced)", usersExec...)),

		// Workspaces, sandboxes, containers.
		e2h(MethodResourceAcquire, SurfaceWorkspace, "acquire the binding's workspace for a run", "CC"),
		e2h(MethodResourceLookup, SurfaceWorkspace, "look up a run's workspace", "CC"),
		h2e(MethodProviderAcquire, SurfaceResources, "acquire a resource for an owner and mode", "GIT"),
		h2e(MethodProviderLookup, SurfaceResources, "look up an acquired resource", "GIT"),
		h2e(MethodProviderReconcile, SurfaceResources, "repair resources against the host's owner status", "GIT"),
		h2e(MethodProviderSweep, SurfaceSweep, "remove spare resources no release covers", "GIT"),
		e2h(MethodProviderOwnerStatus, SurfaceResources, "is an owner still live (during reconcile or sweep)", "GIT"),
		e2h(MethodSandboxPlan, SurfaceExecSandbox, "plan a launch in the run's sandbox", "SH", "CC"),
		e2h(MethodSandboxAdopt, SurfaceExecSandbox, "adopt a launch under a pinned sandbox plan", "SH", "CC"),
		e2h(MethodContainerLaunch, SurfaceExecContainer, "launch in the run's container", "SH", "CC"),
		e2h(MethodContainerAdopt, SurfaceExecContainer, "adopt a container launch after a restart", "SH", "CC"),
		h2e(MethodSandboxProviderPlan, SurfaceSandboxes, "plan a sandboxed launch for its needs", "SRT"),
		h2e(MethodSandboxProviderAdopt, SurfaceSandboxes, "adopt a segment under a pinned plan", "SRT"),
		h2e(MethodContainerProviderPlan, SurfaceContainers, "plan a container for a launch", usersContainr...),
		h2e(MethodContainerProviderCreate, SurfaceContainers, "create the planned container", usersContainr...),
		h2e(MethodContainerProviderSignal, SurfaceContainers, "signal a container's process", usersContainr...),
		h2e(MethodContainerProviderStop, SurfaceContainers, "stop a container", usersContainr...),
		h2e(MethodContainerProviderInspect, SurfaceContainers, "inspect one container", usersContainr...),
		h2e(MethodContainerProviderList, SurfaceContainers, "list the provider's containers of this host", usersContainr...),
		h2e(MethodContainerProviderRemove, SurfaceContainers, "remove a container", usersContainr...),
		h2e(MethodContainerProviderForward, SurfaceForward, "the address the toolbelt is served on for a container", usersContainr...),

		// Tunnels.
		h2e(MethodTunnelRun, SurfaceTunnels, "keep the webhook listener exposed (held open for the daemon's life)", "NG", "CF"),
		e2h(MethodTunnelURL, SurfaceTunnels, "publish the tunnel's current public URL", "NG", "CF"),

		// Storage and state.
		served(e2h(MethodKVGet, SurfaceAlways, "read one key with its version", usersKV...)),
		served(e2h(MethodKVList, SurfaceAlways, "list keys of a namespace, with versions", usersKV...)),
		served(e2h(MethodKVCommit, SurfaceAlways, "apply preconditions, puts, deletes and emissions atomically", usersKV...)),
		e2h(MethodStateWork, SurfaceAlways, "one Work in the extension's scopes", usersState...),
		e2h(MethodStateWorks, SurfaceAlways, "Work in the extension's scopes", usersState...),
		e2h(MethodStateExecutions, SurfaceAlways, "a Work's executions", usersState...),
		e2h(MethodStateWaits, SurfaceAlways, "a Work's Waits", "HU"),
		served(e2h(MethodStateEvent, SurfaceAlways, "one Event in the extension's scopes", usersState...)),
		served(e2h(MethodStateEvents, SurfaceAlways, "a page of Events in the extension's scopes (cursor)", usersState...)),
		served(e2h(MethodStateWorkEvents, SurfaceAlways, "a page of one Work's Events", usersState...)),
		served(e2h(MethodStateSequence, SurfaceAlways, "the log's latest sequence", "HU")),
		served(e2h(MethodStateScopes, SurfaceAlways, "the scopes that use the extension", usersState...)),
		served(e2h(MethodStateScope, SurfaceAlways, "one scope that uses the extension", usersState...)),
		e2h(MethodStateTimers, SurfaceAlways, "the extension's timers", "SC", "IS"),
		served(e2h(MethodEventAccept, SurfaceFamilies, "accept a derived Event of an own family with KV records", "GH", "SC", "IS")),
		served(e2h(MethodWorkCancel, SurfaceWorkKinds, "cancel Work of an own kind", "IS")),
		served(e2h(MethodArtifactCreate, SurfaceAlways, "open an artifact writer", "SH", "CC")),
		served(e2h(MethodArtifactWrite, SurfaceAlways, "write one acknowledged chunk (at most 256 KiB)", "SH", "CC")),
		served(e2h(MethodArtifactCommit, SurfaceAlways, "commit an artifact", "SH", "CC")),
		served(e2h(MethodArtifactAbort, SurfaceAlways, "abandon an artifact writer", "SH", "CC")),
		served(e2h(MethodSecretResolve, SurfaceAlways, "resolve secret names bound to the extension's entries", usersSecrets...)),

		// Background passes, doctor, telemetry.
		served(h2e(MethodTaskRun, SurfaceTasks, "run one pass of a declared task", usersKV...)),
		served(h2e(MethodCheckRun, SurfaceChecks, "run a declared doctor check on the configuration view", usersAll...)),
		h2e(MethodTelemetryExport, SurfaceExporters, "export a telemetry batch (with a deadline)", "PH", "IS"),
		gated(h2e(MethodTelemetrySink, SurfaceAlways, "receive every named telemetry event", "IS", "PH"), PermissionTelemetrySink),
		gated(e2h(MethodTelemetryCapture, SurfaceAlways, "record a named telemetry event", "IS", "PH"), PermissionTelemetryCapture),

		// Setup probes and the config host.
		gated(e2h(MethodProbeList, SurfaceAlways, "list the setup probes the host offers", "GH", "CC"), PermissionProbes),
		gated(e2h(MethodProbeRun, SurfaceAlways, "run one read-only setup probe (30 s)", "GH", "CC"), PermissionProbes),
		h2e(MethodProbeServe, SurfaceProbes, "run one of the extension's own probes", "GH", "CC"),
		gated(e2h(MethodConfigBase, SurfaceAlways, "the committed generation and a handle on its redacted text", "GH"), PermissionConfigRead),
		gated(e2h(MethodConfigEdit, SurfaceAlways, "one RFC 6902 edit against a handle, answered as a new handle", "GH"), PermissionConfigRead),
		gated(e2h(MethodConfigValidate, SurfaceAlways, "validate a candidate handle", "GH"), PermissionConfigRead),
		gated(e2h(MethodConfigTrace, SurfaceAlways, "trace routes against a candidate handle", "GH"), PermissionConfigRead),
		gated(h2e(MethodConfigCandidate, SurfaceConfigCandidate, "the config changes a Work proposes", "GH"), PermissionConfigRead),

		// Run environment, annotations, actions, panels, setup.
		served(h2e(MethodRunEnvironment, SurfaceRunEnvironment, "an environment layer for a run of Work", "GH")),
		h2e(MethodWorkAnnotate, SurfaceAnnotate, "annotate Work in the extension's scopes", "GH"),
		h2e(MethodWorkActions, SurfaceActions, "the actions offered on a target", "GH", "SL", "HU"),
		h2e(MethodWorkAct, SurfaceActions, "invoke an action for an operator", "GH", "SL", "HU"),
		gated(e2h(MethodActionSubmit, SurfaceAlways, "invoke an action for a person the extension identified", "GH", "SL"), PermissionActionSubmit),
		gated(e2h(MethodActionList, SurfaceAlways, "list the actions offered on a target", "GH", "SL"), PermissionActionSubmit),
		h2e(MethodViewRender, SurfacePanels, "a panel on a scope or Work page", "HU"),
		h2e(MethodSetupRun, SurfaceSetup, "run a setup flow with setup.* callbacks", "GH", "SL", "TR"),
		e2h(MethodSetupPrompt, SurfaceSetup, "ask the operator during setup", "GH", "SL", "TR"),
		e2h(MethodSetupBrowser, SurfaceSetup, "open a browser during setup", "GH", "SL", "TR"),
		e2h(MethodSetupSecret, SurfaceSetup, "store a secret during setup", "GH", "SL", "TR"),
		e2h(MethodSetupLookPath, SurfaceSetup, "find a program on the operator's PATH", "GH", "SL", "TR"),
		e2h(MethodSetupExec, SurfaceSetup, "run a program for the operator during setup", "GH", "SL", "TR"),
	}
})

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
