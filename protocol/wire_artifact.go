package protocol

import (
	"strconv"
	"strings"
	"unicode"
)

// Artifact bounds, the same in every host.
const (
	// MaxOpenArtifacts bounds the writers one extension has open at once:
	// the next artifact.create is overloaded until one is committed or
	// aborted, so a package cannot hold the host's files open without end.
	MaxOpenArtifacts = 16
	// MaxArtifactName bounds an artifact's name and its media type.
	MaxArtifactName = 256
)

// CheckArtifactCreate judges artifact.create's params before any host
// state: a name (one line, printable, within MaxArtifactName) and a media
// type within the same bound. Every host judges artifact.create by it.
func CheckArtifactCreate(p ArtifactCreateParams) error {
	switch {
	case p.Name == "":
		return Errorf(ErrInvalid, "artifact.create: name is required: say what the artifact is (\"stdout\", \"transcript.txt\")")
	case len(p.Name) > MaxArtifactName:
		return Errorf(ErrTooLarge, "artifact.create: a name of %d bytes is over the %d-byte bound", len(p.Name), MaxArtifactName)
	case strings.IndexFunc(p.Name, notPrintable) >= 0:
		return Errorf(ErrInvalid, "artifact.create: the name holds a control character; give one printable line")
	case len(p.MediaType) > MaxArtifactName:
		return Errorf(ErrTooLarge, "artifact.create: a media type of %d bytes is over the %d-byte bound", len(p.MediaType), MaxArtifactName)
	case strings.IndexFunc(p.MediaType, notPrintable) >= 0:
		return Errorf(ErrInvalid, "artifact.create: the media type holds a control character")
	}
	return nil
}

// CheckArtifactChunk judges one artifact.write chunk's size: at most
// MaxChunkBytes.
func CheckArtifactChunk(p ArtifactWriteParams) error {
	if len(p.Data) > MaxChunkBytes {
		return Errorf(ErrInvalid, "artifact.write: a chunk of %d bytes is over the %d-byte bound; send it in smaller chunks", len(p.Data), MaxChunkBytes)
	}
	return nil
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// FormatCRC32 writes a CRC-32 as artifact.commit's crc32 carries it: eight
// lower-case hex digits, zero-padded.
func FormatCRC32(sum uint32) string {
	s := strconv.FormatUint(uint64(sum), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

// CheckArtifactCommit judges the checksums an artifact.commit gives against
// the bytes received: size bytes, whose SHA-256 in lower-case hex is digest
// and whose CRC-32 (IEEE) is crc. A checksum left out is not judged; one
// that differs is conflict and a crc32 that is not eight lower-case hex
// digits invalid, and either way the writer stays open. Every host judges
// artifact.commit by it.
func CheckArtifactCommit(p ArtifactCommitParams, size int64, digest string, crc uint32) error {
	if p.Digest != "" && p.Digest != digest {
		return Errorf(ErrConflict, "artifact.commit: artifact %s: digest %s does not match the %d bytes received", p.Artifact, p.Digest, size)
	}
	if p.CRC32 != "" && p.CRC32 != FormatCRC32(crc) {
		if len(p.CRC32) != 8 || strings.Trim(p.CRC32, "0123456789abcdef") != "" {
			return Errorf(ErrInvalid, "artifact.commit: artifact %s: crc32 %q is not eight lower-case hex digits; send the CRC-32 (IEEE) of every byte written, zero-padded", p.Artifact, p.CRC32)
		}
		return Errorf(ErrConflict, "artifact.commit: artifact %s: crc32 %s does not match the %d bytes received", p.Artifact, p.CRC32, size)
	}
	return nil
}
