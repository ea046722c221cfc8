package protocol

// CheckCallback is what a host answers an extension's request (an E→H call)
// before any handler runs: nil when the handler should run, else the
// refusal. The rules, in the order they apply:
//
//   - an in-transaction call to the extension is outstanding (inTransaction):
//     reentrant_call, whatever the method;
//   - the method is not catalogued, or is not extension-to-host:
//     method_not_found;
//   - the manifest does not enable it: undeclared, naming the permission it
//     lacks, or else the surface;
//   - this host does not serve it (served reports false): unsupported.
//
// served says whether the host has a handler for a method. Every host (the
// daemon's session, the in-memory host) answers through this one function,
// so they cannot disagree.
func CheckCallback(m *Manifest, method string, served func(method string) bool, inTransaction bool) error {
	if inTransaction {
		return Errorf(ErrReentrantCall,
			"%s: an in-transaction call to %s is outstanding; no callback is served until it answers", method, m.Name)
	}
	def, ok := Lookup(method)
	if !ok || def.Direction != ExtensionToHost {
		return Errorf(ErrMethodNotFound, "method %q not found on the host", method)
	}
	if !m.Enabled(method) {
		if def.Permission != "" && !m.HasPermission(def.Permission) {
			return Errorf(ErrUndeclared, "%s needs the %s permission, which %s does not declare", method, def.Permission, m.Name)
		}
		return Errorf(ErrUndeclared, "%s needs the %s surface, which %s does not declare", method, def.Surface, m.Name)
	}
	if !served(method) {
		return UnservedCallback(method)
	}
	return nil
}

// UnservedCallback is the answer to a catalogued, enabled extension-to-host
// method a host does not serve: unsupported, honestly, rather than
// method_not_found.
func UnservedCallback(method string) error {
	return Errorf(ErrUnsupported, "%s is catalogued but this host does not serve it yet", method)
}
