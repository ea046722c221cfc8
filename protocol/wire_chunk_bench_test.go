package protocol

import (
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// chunkBenchData is a 256 KiB chunk of random bytes, as an artifact upload
// sends them.
func chunkBenchData() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 256<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// BenchmarkDecodeQuanta measures the chunk's base64 decode alone, in
// decoded bytes per second.
func BenchmarkDecodeQuanta(b *testing.B) {
	raw := chunkBenchData()
	raw = raw[:len(raw)/3*3]
	enc := []byte(base64.StdEncoding.EncodeToString(raw))
	dst := make([]byte, len(raw))
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if !decodeQuanta(dst, enc) {
			b.Fatal("refused")
		}
	}
}

// BenchmarkChunkOnePass256K measures a whole artifact.write params decode.
func BenchmarkChunkOnePass256K(b *testing.B) {
	p := ArtifactWriteParams{Artifact: "a1", Offset: 1 << 20, Data: chunkBenchData()}
	raw, err := p.AppendJSON(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p.Data)))
	for b.Loop() {
		var q ArtifactWriteParams
		if err := q.UnmarshalJSONOnePass(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkAppendJSON256K measures a whole artifact.write params
// encode into a reused buffer.
func BenchmarkChunkAppendJSON256K(b *testing.B) {
	p := ArtifactWriteParams{Artifact: "a1", Offset: 1 << 20, Data: chunkBenchData()}
	var buf []byte
	b.SetBytes(int64(len(p.Data)))
	for b.Loop() {
		var err error
		if buf, err = p.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
