// Package packages holds what the operator and the author do to a package
// directory before the daemon runs it: inspect and check it offline, and
// install, update, roll back and remove it under <config dir>/extensions.
package packages

import (
	"bufio"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// Platform is an executable's target, in GOOS/GOARCH words.
type Platform struct {
	OS   string
	Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Host is the platform this binary runs on.
var Host = Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}

// PlatformError is a command built for another platform (wrong_platform).
type PlatformError struct {
	Path string
	// Built is what the file is built for; its OS is empty for a format
	// no platform this host knows runs.
	Built Platform
	Want  Platform
}

func (e *PlatformError) Error() string {
	if e.Built.OS == "" {
		return fmt.Sprintf("%s is not a script or an executable for %s", e.Path, e.Want)
	}
	return fmt.Sprintf("%s is built for %s, but this host is %s", e.Path, e.Built, e.Want)
}

// CheckPlatform reports whether the executable at path runs on this host:
// nil for a script (#!) or a binary built for this OS and architecture, a
// *PlatformError naming both platforms otherwise.
func CheckPlatform(path string) error {
	got, script, err := PlatformOf(path)
	if err != nil {
		return err
	}
	if script || got == Host {
		return nil
	}
	return &PlatformError{Path: path, Built: got, Want: Host}
}

// PlatformOf reads what the file at path is built for. script is true for
// a file starting with #!, which no platform check applies to; a format no
// platform reads has an empty Platform.
func PlatformOf(path string) (p Platform, script bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return Platform{}, false, err
	}
	defer f.Close()
	head, err := bufio.NewReader(f).Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return Platform{}, false, err
	}
	switch {
	case len(head) >= 2 && head[0] == '#' && head[1] == '!':
		return Platform{}, true, nil
	case len(head) == 4 && string(head) == elf.ELFMAG:
		return elfPlatform(f)
	case len(head) >= 2 && head[0] == 'M' && head[1] == 'Z':
		return pePlatform(f)
	}
	return machoPlatform(f)
}

func elfPlatform(f *os.File) (Platform, bool, error) {
	ef, err := elf.NewFile(f)
	if err != nil {
		return Platform{}, false, nil
	}
	osName := "linux"
	switch ef.OSABI {
	case elf.ELFOSABI_FREEBSD:
		osName = "freebsd"
	case elf.ELFOSABI_NETBSD:
		osName = "netbsd"
	case elf.ELFOSABI_OPENBSD:
		osName = "openbsd"
	case elf.ELFOSABI_SOLARIS:
		osName = "solaris"
	}
	return Platform{OS: osName, Arch: elfArch[ef.Machine]}, false, nil
}

var elfArch = map[elf.Machine]string{
	elf.EM_X86_64: "amd64", elf.EM_386: "386", elf.EM_AARCH64: "arm64", elf.EM_ARM: "arm",
	elf.EM_RISCV: "riscv64", elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x", elf.EM_LOONGARCH: "loong64",
	elf.EM_MIPS: "mips",
}

func pePlatform(f *os.File) (Platform, bool, error) {
	pf, err := pe.NewFile(f)
	if err != nil {
		return Platform{}, false, nil
	}
	arch := map[uint16]string{
		pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_I386: "386",
		pe.IMAGE_FILE_MACHINE_ARM64: "arm64",
	}[pf.Machine]
	return Platform{OS: "windows", Arch: arch}, false, nil
}

func machoPlatform(f *os.File) (Platform, bool, error) {
	arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64", macho.Cpu386: "386"}
	if mf, err := macho.NewFile(f); err == nil {
		return Platform{OS: "darwin", Arch: arch[mf.Cpu]}, false, nil
	}
	ff, err := macho.NewFatFile(f)
	if err != nil {
		return Platform{}, false, nil
	}
	// A universal binary runs here when one of its slices does.
	p := Platform{OS: "darwin"}
	for _, a := range ff.Arches {
		p.Arch = arch[a.Cpu]
		if p == Host {
			break
		}
	}
	return p, false, nil
}
