package protocol

// Method names: one constant for every catalogued method, so sender and
// server never spell a name twice. The catalogue binds each name to its
// direction, surface and permission; a descriptor (Desc) binds a name whose
// wire types exist to its params and result.
const (
	// Lifecycle and transport.
	MethodInitialize = "initialize"
	MethodConfigure  = "configure"
	MethodShutdown   = "shutdown"
	MethodCancel     = "$/cancel"

	// Config validation.
	MethodValidate = "validate"

	// Ingress.
	MethodWebhookHandle    = "webhook.handle"
	MethodIngressPush      = "ingress.push"
	MethodIngressReconcile = "ingress.reconcile"
	MethodIngressDeliver   = "ingress.deliver"

	// Routing and Work kinds.
	MethodRouteMatch      = "route.match"
	MethodRouteSamples    = "route.samples"
	MethodWorkKindTrigger = "work_kind.trigger"
	MethodRecurrenceNext  = "recurrence.next"
	MethodTimerArm        = "timer.arm"
	MethodTimerCancel     = "timer.cancel"

	// Toolbelt operations.
	MethodOperationCall    = "operation.call"
	MethodOperationWait    = "operation.wait"
	MethodOperationEmit    = "operation.emit"
	MethodEmitCommit       = "emit.commit"
	MethodDependencyFilter = "dependency.filter"
	MethodOperationGate    = "operation.gate"
	MethodWorkAdmit        = "work.admit"
	MethodWorkSettleHold   = "work.settle_hold"
	MethodWaitProgress     = "wait.progress"
	MethodWaitTarget       = "wait.target"
	MethodTargetResolve    = "target.resolve"

	// Rendering, authority, segments.
	MethodEventRender      = "event.render"
	MethodEventRenderOwned = "event.render_owned"
	MethodScopeAuthorize   = "scope.authorize"
	MethodSegmentEnded     = "segment.ended"

	// Executors.
	MethodExecutorRun               = "executor.run"
	MethodExecutorRecover           = "executor.recover"
	MethodExecutorWait              = "executor.wait"
	MethodExecutorResume            = "executor.resume"
	MethodExecutorInterrupt         = "executor.interrupt"
	MethodExecutorInject            = "executor.inject"
	MethodExecutorForget            = "executor.forget"
	MethodExecutorStop              = "executor.stop"
	MethodExecutorInteractiveLaunch = "executor.interactive_launch"
	MethodExecutorAttach            = "executor.attach"
	MethodExecutorContainerAttach   = "executor.container_attach"
	MethodExecutorLive              = "executor.live"
	MethodExecutionPersistRecovery  = "execution.persist_recovery"

	// Workspaces, sandboxes, containers.
	MethodResourceAcquire          = "resource.acquire"
	MethodResourceLookup           = "resource.lookup"
	MethodProviderAcquire          = "provider.acquire"
	MethodProviderLookup           = "provider.lookup"
	MethodProviderReconcile        = "provider.reconcile"
	MethodProviderSweep            = "provider.sweep"
	MethodProviderOwnerStatus      = "provider.owner_status"
	MethodSandboxPlan              = "sandbox.plan"
	MethodSandboxAdopt             = "sandbox.adopt"
	MethodContainerLaunch          = "container.launch"
	MethodContainerAdopt           = "container.adopt"
	MethodSandboxProviderPlan      = "sandbox_provider.plan"
	MethodSandboxProviderAdopt     = "sandbox_provider.adopt"
	MethodContainerProviderPlan    = "container_provider.plan"
	MethodContainerProviderCreate  = "container_provider.create"
	MethodContainerProviderSignal  = "container_provider.signal"
	MethodContainerProviderStop    = "container_provider.stop"
	MethodContainerProviderInspect = "container_provider.inspect"
	MethodContainerProviderList    = "container_provider.list"
	MethodContainerProviderRemove  = "container_provider.remove"
	MethodContainerProviderForward = "container_provider.forward"

	// Tunnels.
	MethodTunnelRun = "tunnel.run"
	MethodTunnelURL = "tunnel.url"

	// Storage and state.
	MethodKVGet           = "kv.get"
	MethodKVList          = "kv.list"
	MethodKVCommit        = "kv.commit"
	MethodStateWork       = "state.work"
	MethodStateWorks      = "state.works"
	MethodStateExecutions = "state.executions"
	MethodStateWaits      = "state.waits"
	MethodStateEvent      = "state.event"
	MethodStateEvents     = "state.events"
	MethodStateWorkEvents = "state.work_events"
	MethodStateSequence   = "state.sequence"
	MethodStateScopes     = "state.scopes"
	MethodStateScope      = "state.scope"
	MethodStateTimers     = "state.timers"
	MethodEventAccept     = "event.accept"
	MethodWorkCancel      = "work.cancel"
	MethodArtifactCreate  = "artifact.create"
	MethodArtifactWrite   = "artifact.write"
	MethodArtifactCommit  = "artifact.commit"
	MethodArtifactAbort   = "artifact.abort"
	MethodSecretResolve   = "secret.resolve"

	// Background passes, doctor, telemetry.
	MethodTaskRun          = "task.run"
	MethodCheckRun         = "check.run"
	MethodTelemetryExport  = "telemetry.export"
	MethodTelemetrySink    = "telemetry.sink"
	MethodTelemetryCapture = "telemetry.capture"

	// Setup probes and the config host.
	MethodProbeList       = "probe.list"
	MethodProbeRun        = "probe.run"
	MethodProbeServe      = "probe.serve"
	MethodConfigBase      = "config.base"
	MethodConfigEdit      = "config.edit"
	MethodConfigValidate  = "config.validate"
	MethodConfigTrace     = "config.trace"
	MethodConfigCandidate = "config.candidate"

	// Run environment, annotations, actions, panels, setup.
	MethodRunEnvironment = "run.environment"
	MethodWorkAnnotate   = "work.annotate"
	MethodWorkActions    = "work.actions"
	MethodWorkAct        = "work.act"
	MethodActionSubmit   = "action.submit"
	MethodActionList     = "action.list"
	MethodViewRender     = "view.render"
	MethodSetupRun       = "setup.run"
	MethodSetupPrompt    = "setup.prompt"
	MethodSetupBrowser   = "setup.browser"
	MethodSetupSecret    = "setup.secret"
	MethodSetupLookPath  = "setup.look_path"
	MethodSetupExec      = "setup.exec"
)
