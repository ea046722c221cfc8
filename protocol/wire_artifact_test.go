package protocol

import (
	"strings"
	"testing"
)

func TestCheckArtifactCreateRefusesWhatNoHostKeeps(t *testing.T) {
	tests := []struct {
		name string
		p    ArtifactCreateParams
		code string
	}{
		{"a name and a media type", ArtifactCreateParams{Name: "transcript.txt", MediaType: "text/plain"}, ""},
		{"no name", ArtifactCreateParams{}, CodeInvalid},
		{"a control character", ArtifactCreateParams{Name: "a\tb"}, CodeInvalid},
		{"a long name", ArtifactCreateParams{Name: strings.Repeat("n", MaxArtifactName+1)}, CodeTooLarge},
		{"a name at the bound", ArtifactCreateParams{Name: strings.Repeat("n", MaxArtifactName)}, ""},
		{"a long media type", ArtifactCreateParams{Name: "x", MediaType: strings.Repeat("m", MaxArtifactName+1)}, CodeTooLarge},
		{"a media type of two lines", ArtifactCreateParams{Name: "x", MediaType: "text/plain\nx"}, CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(CheckArtifactCreate(tt.p)); got != tt.code {
				t.Fatalf("code %q, want %q", got, tt.code)
			}
		})
	}
}

func TestCheckArtifactChunkBoundsTheChunk(t *testing.T) {
	if err := CheckArtifactChunk(ArtifactWriteParams{Data: make([]byte, MaxChunkBytes)}); err != nil {
		t.Fatalf("a chunk at the bound: %v", err)
	}
	if got := CodeOf(CheckArtifactChunk(ArtifactWriteParams{Data: make([]byte, MaxChunkBytes+1)})); got != CodeInvalid {
		t.Fatalf("a chunk over the bound: %q, want invalid", got)
	}
}

func TestCutLineKeepsTheFirstLineWithinTheBoundOnACharacter(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"first\nsecond", 100, "first"},
		{"first\r\nsecond", 100, "first"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never cut inside it
		{"éé", 3, "é"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := CutLine(tt.in, tt.max); got != tt.want {
			t.Errorf("CutLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestFormatCRC32IsEightLowerCaseHexDigits(t *testing.T) {
	for sum, want := range map[uint32]string{0: "00000000", 1: "00000001", 0xabc: "00000abc", 0xdeadbeef: "deadbeef"} {
		if got := FormatCRC32(sum); got != want {
			t.Errorf("FormatCRC32(%#x) = %q, want %q", sum, got, want)
		}
	}
}

// TestCheckArtifactCommitJudgesEachChecksumGiven: a checksum left out is
// not judged; one given must match the bytes received; a crc32 that is not
// eight lower-case hex digits says what to send.
func TestCheckArtifactCommitJudgesEachChecksumGiven(t *testing.T) {
	const digest, crc = "3c145db66618009c23d0fa0ca48d21502b9fffbd17652267d9dd9402fc696523", uint32(0x0badf00d)
	tests := []struct {
		name string
		p    ArtifactCommitParams
		code string
	}{
		{"none", ArtifactCommitParams{}, ""},
		{"both right", ArtifactCommitParams{Digest: digest, CRC32: "0badf00d"}, ""},
		{"digest right", ArtifactCommitParams{Digest: digest}, ""},
		{"crc32 right", ArtifactCommitParams{CRC32: "0badf00d"}, ""},
		{"digest wrong", ArtifactCommitParams{Digest: "00" + digest[2:], CRC32: "0badf00d"}, CodeConflict},
		{"crc32 wrong", ArtifactCommitParams{Digest: digest, CRC32: "0badf00e"}, CodeConflict},
		{"crc32 unpadded", ArtifactCommitParams{CRC32: "badf00d"}, CodeInvalid},
		{"crc32 upper case", ArtifactCommitParams{CRC32: "0BADF00D"}, CodeInvalid},
		{"crc32 as a number", ArtifactCommitParams{CRC32: "195948557"}, CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckArtifactCommit(tt.p, 71, digest, crc)
			if got := CodeOf(err); (err == nil) != (tt.code == "") || (err != nil && got != tt.code) {
				t.Fatalf("%v (code %q), want code %q", err, got, tt.code)
			}
		})
	}
}
