package protocol

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestManifestAppendJSONWritesWhatMarshalWrites fills every field of every
// manifest type with random values (nil, empty and full slices, strings
// that need escaping or are not UTF-8, raw values json would reformat) and
// wants AppendJSON's bytes, or its failure, to be json.Marshal's.
func TestManifestAppendJSONWritesWhatMarshalWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 7))
	seen := map[string]bool{}
	direct := 0
	const cases = 3000
	for i := range cases {
		var m Manifest
		fillRandom(r, reflect.ValueOf(&m).Elem(), "Manifest", seen)
		compareAppend(t, i, m)
		compareAppend(t, i, InitializeResult{ProtocolVersion: r.IntN(3), Manifest: m})
		w := objectWriter{ok: true}
		m.members(&w)
		if w.ok {
			direct++
		}
	}
	// Most cases take the direct path, so the comparison is not json's
	// output with itself.
	if direct < cases/2 {
		t.Fatalf("only %d of %d manifests were encoded directly", direct, cases)
	}
	// Every field was filled at least once, so a field added to a type and
	// not to its encoder meets the comparison.
	var missing []string
	walkFields(reflect.TypeFor[Manifest](), "Manifest", func(path string) {
		if !seen[path] {
			missing = append(missing, path)
		}
	})
	if len(missing) > 0 {
		t.Fatalf("fields never filled: %v", missing)
	}
}

// TestManifestAppendJSONOfThePackagedExamples encodes the manifests in
// testdata as json.Marshal does.
func TestManifestAppendJSONOfThePackagedExamples(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no manifests in testdata")
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseManifest(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		compareAppend(t, i, *m)
	}
}

// TestManifestAppendJSONLeavesWhatItDoubtsToJSON: a default json would
// reformat and a name that is not UTF-8 go through json.Marshal, which
// reformats the one and refuses the other.
func TestManifestAppendJSONLeavesWhatItDoubtsToJSON(t *testing.T) {
	m := Manifest{Name: "x", Provides: Provides{Resources: []Resource{{Type: "r", Settings: []Setting{{Field: "f", Type: "int", Default: jsontext.Value(`{ "a" : 1 }`)}}}}}}
	got, err := m.AppendJSON(nil)
	if err != nil || !bytes.Contains(got, []byte(`"default":{"a":1}`)) {
		t.Fatalf("reformatted default: %s, %v", got, err)
	}
	m.Name = "\xff"
	if _, err := m.AppendJSON(nil); err == nil {
		t.Fatal("a name that is not UTF-8 was encoded")
	}
}

func compareAppend[T interface{ AppendJSON([]byte) ([]byte, error) }](t *testing.T, i int, v T) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, gotErr := v.AppendJSON([]byte("prefix"))
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("case %d: AppendJSON error %v, json.Marshal error %v", i, gotErr, wantErr)
	}
	if wantErr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("case %d:\nAppendJSON   %s\njson.Marshal prefix%s", i, got, want)
	}
}

// fillRandom gives v random contents, recording each struct field it set
// to something other than its zero value in seen.
func fillRandom(r *rand.Rand, v reflect.Value, path string, seen map[string]bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			p := path + "." + f.Name
			if r.IntN(3) == 0 {
				continue
			}
			fillRandom(r, v.Field(i), p, seen)
			if !v.Field(i).IsZero() {
				seen[p] = true
			}
		}
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -7, 1 << 40}[r.IntN(4)])
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fillRandom(r, v.Elem(), path, seen)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[jsontext.Value]() {
			v.SetBytes(randomRaw(r))
			return
		}
		switch r.IntN(4) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fillRandom(r, v.Index(i), path, seen)
			}
		}
	case reflect.Map:
		switch r.IntN(3) {
		case 0: // nil
		default:
			v.Set(reflect.MakeMap(v.Type()))
			for range r.IntN(3) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fillRandom(r, k, path, seen)
				fillRandom(r, e, path, seen)
				v.SetMapIndex(k, e)
			}
		}
	default:
		panic("fillRandom: no case for " + v.Type().String())
	}
}

// walkFields calls fn with the path of every struct field under t.
func walkFields(t reflect.Type, path string, fn func(string)) {
	for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && t != reflect.TypeFor[jsontext.Value]()) {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		fn(path + "." + f.Name)
		walkFields(f.Type, path+"."+f.Name, fn)
	}
}

// randomString is mostly plain, sometimes in need of escaping, and rarely
// not UTF-8 (json refuses it, and the whole manifest with it).
func randomString(r *rand.Rand) string {
	switch n := r.IntN(100); {
	case n < 2:
		return "\xff"
	case n < 25:
		return []string{"ü", "\u2028\u2029", "<a&b>", "\x00\x1f", `"q\`, "\t\n", "\U0001F600"}[r.IntN(7)]
	default:
		return []string{"", "a", "bench.echo", "Name"}[r.IntN(4)]
	}
}

// randomRaw is mostly nil or a value json writes as it stands, sometimes
// one json reformats, and rarely one it refuses (empty, cut short, or a
// repeated name).
func randomRaw(r *rand.Rand) jsontext.Value {
	var v string
	switch n := r.IntN(100); {
	case n < 3:
		v = []string{``, `{`, `{"a":1,"a":2}`}[r.IntN(3)]
	case n < 15:
		v = []string{`{ "a" : 1 }`, `"\u0041"`, `12.50`, `[1, 2]`}[r.IntN(4)]
	case n < 55:
		return nil
	default:
		v = []string{`{}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, `[1,2]`, `"x"`, `null`, `true`}[r.IntN(6)]
	}
	return jsontext.Value(v)
}

// TestManifestAppendJSONAnswerDecodes is what lets a host take an
// initialize answer whose manifest bytes are its package manifest's, as
// AppendJSON writes it, without decoding them: those bytes always decode as
// an initialize result (so decoding could not have refused them), and in
// canonical form they are the package manifest's canonical form (so the
// comparison of the two declarations holds).
func TestManifestAppendJSONAnswerDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 3))
	checked := 0
	for i := range 2000 {
		var m Manifest
		fillRandom(r, reflect.ValueOf(&m).Elem(), "Manifest", map[string]bool{})
		b, err := m.AppendJSON(nil)
		if err != nil {
			continue
		}
		answer, err := InitializeResult{ProtocolVersion: 1, Manifest: m}.AppendJSON(nil)
		if err != nil {
			t.Fatalf("case %d: the manifest was written, the answer not: %v", i, err)
		}
		var back InitializeResult
		if err := json.Unmarshal(answer, &back); err != nil {
			t.Fatalf("case %d: %s does not decode: %v", i, answer, err)
		}
		want, err := m.Canonical()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got := jsontext.Value(b)
		if err := got.Canonicalize(); err != nil || !bytes.Equal(want, got) {
			t.Fatalf("case %d: canonical form %s, of the written bytes %s (%v)", i, want, got, err)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("only %d of 2000 manifests were written", checked)
	}
}
