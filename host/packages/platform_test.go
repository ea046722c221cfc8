package packages

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckPlatformJudgesRealBinaries builds one tiny program for this host
// and for another OS and architecture, and checks only the foreign one is
// refused, naming both platforms; a script is never judged.
func TestCheckPlatformJudgesRealBinaries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool to build test binaries: go is not on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := Platform{OS: "windows", Arch: "arm64"}
	if Host.OS == "windows" {
		foreign = Platform{OS: "linux", Arch: "amd64"}
	}
	build := func(p Platform, out string) string {
		t.Helper()
		cmd := exec.Command("go", "build", "-o", out, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0", "GO111MODULE=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building for %s: %v\n%s", p, err, b)
		}
		return out
	}
	native := build(Host, filepath.Join(dir, "native"))
	other := build(foreign, filepath.Join(dir, "other"))
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("just some words\n"), 0o700); err != nil {
		t.Fatal(err)
	}

	for _, ok := range []string{native, script} {
		if err := CheckPlatform(ok); err != nil {
			t.Errorf("CheckPlatform(%s) = %v, want nil", filepath.Base(ok), err)
		}
	}
	var pe *PlatformError
	if err := CheckPlatform(other); !errors.As(err, &pe) || pe.Built != foreign || pe.Want != Host {
		t.Fatalf("CheckPlatform(foreign) = %v, want a PlatformError naming %s and %s", err, foreign, Host)
	}
	if err := CheckPlatform(text); !errors.As(err, &pe) || pe.Built.OS != "" {
		t.Fatalf("CheckPlatform(text file) = %v, want a PlatformError for an unknown format", err)
	}
}
