package protocol

import "sync"

// Diagnosis is what an operator reads for one host diagnostic code: what
// is wrong and what to change. Every refusal and failure the host reports
// about a package (in its log, the extensions doctor check, extension list
// and the CLI) carries one of these codes; none of the text quotes a config
// value or a secret.
type Diagnosis struct {
	Code string
	// Summary says what is wrong.
	Summary string
	// Remedy says what to change.
	Remedy string
}

// Diagnostic codes that are not wire codes: the host reports them about a
// package, an extension never sends them.
const (
	CodeInvalidPackage       = "invalid_package"
	CodeNotServed            = "not_served"
	CodeRegistrationConflict = "registration_conflict"
	CodeExtensionRestarted   = "extension_restarted"
	CodeExtensionUnavailable = "extension_unavailable"
	CodeExtensionCheckFailed = "extension_check_failed"
	CodeExtensionCheckBad    = "extension_check_invalid"
	CodeExtensionRemoved     = "extension_removed"
	CodeExtensionChanged     = "extension_changed"
	CodeConfigWarnings       = "config_warnings"

	// Codes of extension check, inspect and the installer.
	CodeWrongPlatform        = "wrong_platform"
	CodeUnknownOperation     = "unknown_operation"
	CodeNoPlaybooks          = "no_playbooks"
	CodeNoCertification      = "no_certification"
	CodeInvalidCertification = "invalid_certification"
	CodeFixtureMissingCase   = "fixture_missing_case"
	CodeInvalidArchive       = "invalid_archive"
	CodeInstallState         = "install_state"
	CodeBindingRefused       = "binding_refused"
)

// diagnoses is the one table of what each diagnostic code means and what
// to change. Diagnose reads it; a test checks every code the host reports
// has a row.
var diagnoses = []Diagnosis{
	{CodeInvalidPackage, "a manifest rule is broken, the command is missing or not executable, or the directory is not named after the manifest",
		"correct what the message names in the package's open-conduit-extension.json or its files, then run open-conduit extension rescan"},
	{CodeIncompatibleProtocol, "the package and this host share no protocol version",
		"list a protocol version this host speaks (open-conduit version prints them) and rebuild against an SDK for it, or upgrade Open Conduit"},
	{CodeNeedsNewerHost, "the manifest has a field or permission this Open Conduit does not know",
		"correct it if it is a typo; otherwise upgrade Open Conduit, or install a release of the package built for this one"},
	{CodeNotServed, "the manifest runs open-conduit extension-run, but this binary does not serve that package",
		"install the package's own release, or upgrade Open Conduit to one that serves it"},
	{CodeRegistrationConflict, "the package claims a name Open Conduit or another package registers",
		"rename what the package declares, or remove one of the conflicting packages"},
	{CodeStartFailed, "the package's command could not be started",
		"check that the command exists in the package directory and is executable for this platform; then open-conduit extension restart NAME"},
	{CodeHandshakeFailed, "the process exited or stayed silent during initialize or configure",
		"read the package's log (open-conduit logs NAME): an extension writes only protocol messages to stdout and its logs to stderr"},
	{CodeUnsupportedProtocolVersion, "initialize found no protocol version both sides speak",
		"install a release of the package that speaks a protocol version this host lists (open-conduit version)"},
	{CodeManifestMismatch, "the process announced a different manifest than its open-conduit-extension.json",
		"the binary and the manifest come from different releases: reinstall the package"},
	{CodeKVDowngrade, "the manifest's kv_version is older than the KV layout a newer release already wrote",
		"reinstall the newer release, or restore a backup taken before the upgrade"},
	{CodeConfigureRefused, "the package refused its configuration, or registered names outside its namespace",
		"run open-conduit config check and read the package's log (open-conduit logs NAME)"},
	{CodeTransport, "the process crashed or broke the protocol; it is restarted with backoff",
		"read the package's log (open-conduit logs NAME) for the crash"},
	{CodeExtensionRestarted, "the process crashed and was restarted",
		"read the package's log (open-conduit logs NAME) for the crash"},
	{CodeExtensionUnavailable, "the package is not running, so nothing it serves answers",
		"see its state in open-conduit extension list and its log (open-conduit logs NAME); open-conduit extension restart NAME starts it again"},
	{CodeExtensionCheckFailed, "a doctor check the package declares failed",
		"read the check's detail"},
	{CodeExtensionCheckBad, "a doctor check answered a status this host does not know",
		"the package's check is broken: report it to the package's authors"},
	{CodeExtensionRemoved, "the package's directory is gone from disk; the running process keeps serving until it stops",
		"restart the daemon or the package to let it go, or reinstall it"},
	{CodeExtensionChanged, "the package's files changed on disk since it started",
		"open-conduit extension restart NAME loads the new release"},
	{CodeConfigWarnings, "the live configuration has warnings: it runs, but something in it does nothing or should change",
		"open-conduit config check lists each warning with its JSON path"},
	{CodeWrongPlatform, "the package's command is built for another OS or architecture",
		"build it for this platform (GOOS and GOARCH), or install the release archive built for it"},
	{CodeUnknownOperation, "a playbook names an operation nobody declares",
		"declare it under provides.operations, correct the name, or pass --allow NAME if it is one of the package's own setup probes"},
	{CodeNoPlaybooks, "the playbooks directory holds no <name>.md playbook",
		"add one, or drop playbooks from the manifest"},
	{CodeNoCertification, "the package has no certification.json",
		"add one so certification can check each surface the package declares"},
	{CodeInvalidCertification, "certification.json does not parse, or has neither a fixture nor a command",
		"fix it: a JSON object with a \"fixture\" object or a \"command\" array"},
	{CodeFixtureMissingCase, "the certification fixture lacks a case it needs, or a case names something the package does not declare",
		"add an ingress or executor case, or name a declared route handler or operation"},
	{CodeInvalidArchive, "the release archive was refused",
		"check the path or URL and its --sha256; an archive is a .tar.gz holding one package directory of regular files and directories"},
	{CodeInstallState, "installing over an installed package, or changing one that is not installed",
		"open-conduit extension list shows what is installed: use update to replace a package, install to add one"},
	{CodeBindingRefused, "a route handler refuses the binding its route binds",
		"change the binding's executor, operations, grants or config to what the message asks, or route to another handler"},
	{CodeUnavailable, "the daemon or the package cannot serve this now",
		"wait for the daemon to finish starting (open-conduit status), or start the package again (open-conduit extension restart NAME)"},
}

// diagnosisIndex finds a diagnosis by code, built on first use.
var diagnosisIndex = sync.OnceValue(func() map[string]Diagnosis {
	m := make(map[string]Diagnosis, len(diagnoses))
	for _, d := range diagnoses {
		m[d.Code] = d
	}
	return m
})

// Diagnose returns the operator's reading of a diagnostic code.
func Diagnose(code string) (Diagnosis, bool) {
	d, ok := diagnosisIndex()[code]
	return d, ok
}

// Diagnoses returns the whole table, in a stable order.
func Diagnoses() []Diagnosis {
	return append([]Diagnosis(nil), diagnoses...)
}
