package protocol

import (
	"bytes"
	"encoding/base64"
	"testing"

	json "github.com/go-json-experiment/json"
)

// chunkCases are artifact.write params as peers might send them: the one
// pass must take the common ones and agree with json.Unmarshal on every one.
var chunkCases = []struct {
	name    string
	in      string
	onePass bool // the one pass decodes it without json.Unmarshal's help
}{
	{"go_sdk", `{"artifact_id":"a1","offset":262144,"data":"aGVsbG8gd29ybGQ="}`, true},
	{"data_first_spaced", " {\n\t\"data\" : \"aGk=\" ,\r\n \"offset\":2, \"artifact_id\" : \"a\\u00e9\" } ", true},
	{"empty_data", `{"artifact_id":"a1","offset":0,"data":""}`, true},
	{"unknown_members", `{"x":{"data":"zz","y":["}",{"]":1}]},"data":"AAAA","z":[1,true,null,"\""],"offset":1,"artifact_id":"a"}`, true},
	{"two_pad", `{"data":"AA==","offset":0,"artifact_id":"a"}`, true},
	{"escaped_slash", `{"artifact_id":"a1","offset":0,"data":"ab\/+"}`, false},
	{"unicode_escape", `{"artifact_id":"a1","offset":0,"data":"\u0041AAA"}`, false},
	{"escaped_name", `{"artifact_id":"a1","offset":0,"d\u0061ta":"AAAA"}`, false},
	{"unpadded", `{"artifact_id":"a1","offset":0,"data":"aGk"}`, false},
	{"raw_line_breaks", "{\"artifact_id\":\"a1\",\"offset\":0,\"data\":\"AAAA\r\n\r\nAAAA\"}", false},
	{"escaped_newline", `{"artifact_id":"a1","offset":0,"data":"AA\nAA==="}`, false},
	{"not_base64", `{"artifact_id":"a1","offset":0,"data":"A*AA"}`, false},
	{"data_twice", `{"data":"AAAA","artifact_id":"a1","offset":0,"data":"AAAA"}`, false},
	{"data_null", `{"artifact_id":"a1","offset":0,"data":null}`, false},
	{"data_number", `{"artifact_id":"a1","offset":0,"data":5}`, false},
	{"no_data", `{"artifact_id":"a1","offset":3}`, false},
	{"empty_object", `{}`, false},
	{"offset_twice", `{"offset":1,"offset":2,"data":"AAAA"}`, false},
	{"offset_fraction", `{"offset":1.5,"data":"AAAA"}`, false},
	{"offset_string", `{"offset":"1","data":"AAAA"}`, false},
	{"trailing_comma", `{"offset":1,"data":"AAAA",}`, false},
	{"trailing_bytes", `{"offset":1,"data":"AAAA"} x`, false},
	{"unterminated", `{"offset":1,"data":"AAAA`, false},
	{"array", `["data","AAAA"]`, false},
	{"bad_member_value", `{"x":tru,"data":"AAAA"}`, false},
	{"unbalanced_member", `{"x":{"a":[1},"data":"AAAA"}`, false},
	{"invalid_utf8_member", "{\"artifact_id\":\"\xff\",\"data\":\"AAAA\"}", false},
}

// TestChunkOnePassAgreesWithUnmarshal pins that the one pass decodes what
// it should itself and that every params decodes exactly as json.Unmarshal
// decodes it, errors included.
func TestChunkOnePassAgreesWithUnmarshal(t *testing.T) {
	for _, tc := range chunkCases {
		t.Run(tc.name, func(t *testing.T) {
			var fast ArtifactWriteParams
			if got := fast.unmarshalChunk([]byte(tc.in)); got != tc.onePass {
				t.Errorf("one pass took it: %v, want %v", got, tc.onePass)
			}
			compareWithUnmarshal(t, []byte(tc.in))
		})
	}
}

// TestChunkOnePassOwnsItsBytes pins that the decoded chunk is not the
// params' buffer, which the connection reuses for the next message.
func TestChunkOnePassOwnsItsBytes(t *testing.T) {
	raw := []byte(`{"artifact_id":"a1","offset":0,"data":"AAAAAAAA"}`)
	var p ArtifactWriteParams
	if err := p.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'A'
	}
	if !bytes.Equal(p.Data, make([]byte, 6)) || p.Artifact != "a1" {
		t.Fatalf("the params changed with the buffer they came from: %+v", p)
	}
}

// TestChunkOnePassLargeChunk encodes a chunk at the bound as json.Marshal
// does and decodes it in one pass.
func TestChunkOnePassLargeChunk(t *testing.T) {
	data := make([]byte, MaxChunkBytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	raw, err := json.Marshal(ArtifactWriteParams{Artifact: "a1", Offset: 1 << 40, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	own, err := ArtifactWriteParams{Artifact: "a1", Offset: 1 << 40, Data: data}.AppendJSON(nil)
	if err != nil || !bytes.Equal(own, raw) {
		t.Fatalf("AppendJSON wrote %d bytes (%v), json.Marshal %d", len(own), err, len(raw))
	}
	var p ArtifactWriteParams
	if !p.unmarshalChunk(raw) {
		t.Fatal("the one pass gave way on the Go SDK's own encoding")
	}
	if !bytes.Equal(p.Data, data) || p.Offset != 1<<40 || p.Artifact != "a1" {
		t.Fatalf("decoded %d bytes at %d for %q", len(p.Data), p.Offset, p.Artifact)
	}
}

// FuzzChunkOnePass checks the one pass against json.Unmarshal on anything.
func FuzzChunkOnePass(f *testing.F) {
	for _, tc := range chunkCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"artifact_id":"a","offset":0,"data":"` + base64.StdEncoding.EncodeToString([]byte("some bytes!")) + `"}`))
	f.Fuzz(compareWithUnmarshal)
}

func compareWithUnmarshal(t *testing.T, raw []byte) {
	compareOnePass[ArtifactWriteParams](t, raw)
}

// FuzzDecodeQuanta holds the chunk's base64 decoder to the base64
// package's: the same bytes for whole unpadded quanta of the alphabet, and
// a refusal for anything else (a line break, which the package skips, a
// padding character, a byte outside the alphabet).
func FuzzDecodeQuanta(f *testing.F) {
	f.Add([]byte("aGVsbG8gd29ybGQh"), []byte{})
	f.Add([]byte{}, []byte("some bytes, 3k of them"))
	f.Add([]byte("AAAA\nAAA"), []byte{})
	f.Add([]byte("AA==AAAA"), []byte{})
	// Long enough for the sixteen-character steps, with the odd byte in one.
	f.Add([]byte("AAAAAAAAAA\nAAAAAAAAAAAAAAAAAAAAA"), []byte{})
	f.Add([]byte("AAAAAAAAAAAAAAA=AAAAAAAAAAAAAAAA"), []byte{})
	f.Add([]byte("AAAA\xffAAAAAAAAAAAAAAAAAAAAAAAAAAA"), []byte{})
	f.Fuzz(func(t *testing.T, enc, raw []byte) {
		if len(raw) > 0 {
			raw = raw[:len(raw)/3*3]
			enc = []byte(base64.StdEncoding.EncodeToString(raw))
		}
		enc = enc[:len(enc)/4*4]
		want := make([]byte, len(enc)/4*3)
		n, err := base64.StdEncoding.Decode(want, enc)
		wantOK := err == nil && n == len(want) && bytes.IndexByte(enc, '=') < 0
		got := make([]byte, len(enc)/4*3)
		if ok := decodeQuanta(got, enc); ok != wantOK || ok && !bytes.Equal(got, want) {
			t.Fatalf("%q: decoded %v %x, the base64 package %v %x", enc, ok, got, wantOK, want)
		}
	})
}

// FuzzChunkAppendJSON holds the params' own encoding to json.Marshal's,
// byte for byte, refusals included: it is the wire format every other
// language's extension reads and writes.
func FuzzChunkAppendJSON(f *testing.F) {
	f.Add("a1", int64(262144), []byte("hello world"))
	f.Add("", int64(-1), []byte{})
	f.Add("a\u2028\"\\<>&\x01", int64(1<<62), make([]byte, 1000))
	f.Add("\xff", int64(0), []byte{1, 2})
	f.Fuzz(func(t *testing.T, id string, offset int64, data []byte) {
		for _, d := range [][]byte{data, nil} {
			p := ArtifactWriteParams{Artifact: id, Offset: offset, Data: d}
			want, wantErr := json.Marshal(p)
			got, err := p.AppendJSON([]byte("prefix"))
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%+v: error %v, json.Marshal's %v", p, err, wantErr)
			}
			if err == nil && string(got) != "prefix"+string(want) {
				t.Fatalf("%+v:\n%s\njson.Marshal:\n%s", p, got, want)
			}
		}
	})
}
