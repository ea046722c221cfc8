package protocol

import (
	"slices"
	"strings"
)

// DependencyWait is the Wait a dependency.filter call asks about: its ID,
// its Work, the package that owns it (the one asked) and its description.
type DependencyWait struct {
	ID          string `json:"wait_id"`
	Work        string `json:"work_id"`
	Owner       string `json:"owner"`
	Description string `json:"description,omitempty"`
}

// DependencyFilterParams asks the package owning a Wait whether an Event
// that joined the Wait's Work satisfies it. The host calls it inside the
// routing transaction, bounded (InTransactionDeadlineMillis), and the
// package may make no callback while serving it.
type DependencyFilterParams struct {
	Wait  DependencyWait `json:"wait"`
	Event Event          `json:"event"`
}

// DependencyFilterResult says whether the Event wakes the Wait. An error
// or a timeout counts as false: the Event stays an input of the Work.
type DependencyFilterResult struct {
	Match bool `json:"match"`
}

// RunEnvironmentParams asks a package for its environment layer of one
// run of Work in a scope that uses it: the scope, the Work, the execution
// about to start, the binding it runs under and the connection that
// binding names (as an operation's authority carries it; "" for none).
type RunEnvironmentParams struct {
	Scope      string   `json:"scope_id"`
	Work       WorkView `json:"work"`
	Execution  string   `json:"execution_id"`
	Attempt    int      `json:"attempt"`
	Binding    string   `json:"binding"`
	Connection string   `json:"connection,omitempty"`
}

// RunEnvironmentResult is one environment layer: variables to put in the
// run's environment. Values are secret-like: the host never logs them.
type RunEnvironmentResult struct {
	Env map[string]string `json:"env,omitempty"`
}

// MaxRunEnvironmentBytes bounds one run.environment layer: its names and
// values together.
const MaxRunEnvironmentBytes = 1 << 20

// HostEnv are the variables the host sets in every run's environment
// itself; no environment layer may set them.
var HostEnv = []string{EnvToolbelt, EnvToken, EnvWork, EnvExecution, EnvBinary}

// CheckRunEnvironment checks one package's layer: each name a non-empty
// environment name (no "=", no NUL) that is not one of HostEnv, each value
// without NUL, and the whole within MaxRunEnvironmentBytes. Errors name
// the variable, never its value.
func CheckRunEnvironment(pkg string, env map[string]string) error {
	size := 0
	for k, v := range env {
		size += len(k) + len(v)
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return Errorf(ErrInvalid, "%s of %s set the variable %q: a name is non-empty, without '=' or NUL", MethodRunEnvironment, pkg, k)
		case strings.ContainsRune(v, 0):
			return Errorf(ErrInvalid, "%s of %s set %s to a value holding NUL, which no environment carries", MethodRunEnvironment, pkg, k)
		case slices.Contains(HostEnv, k):
			return Errorf(ErrInvalid, "%s of %s set %s, which the host sets itself: leave it out of the layer", MethodRunEnvironment, pkg, k)
		}
	}
	if size > MaxRunEnvironmentBytes {
		return Errorf(ErrTooLarge, "%s of %s answered %d bytes of environment, over the %d-byte bound", MethodRunEnvironment, pkg, size, MaxRunEnvironmentBytes)
	}
	return nil
}

// ExecutorForgetParams tells an executor that an execution settled: it may
// drop what it keeps about it (records, files). The host sends it once the
// execution is settled, best effort.
type ExecutorForgetParams = ExecutionRef

// Wire types of dependency.filter, run.environment and executor.forget.
var (
	// DependencyFilter asks whether an Event wakes a package's Wait.
	DependencyFilter = Desc[DependencyFilterParams, DependencyFilterResult]{Name: MethodDependencyFilter}
	// RunEnvironment asks a package for its environment layer of a run.
	RunEnvironment = Desc[RunEnvironmentParams, RunEnvironmentResult]{Name: MethodRunEnvironment}
	// ExecutorForget drops a settled execution's local state.
	ExecutorForget = Desc[ExecutorForgetParams, ExecutorControlResult]{Name: MethodExecutorForget}
)
