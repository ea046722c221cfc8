package protocol

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// daemonInitialize is initialize's params as the daemon sends them.
const daemonInitialize = `{"protocol_versions":[1],"host":{"name":"open-conduit","version":"0.1.0"},"state_dir":"/var/lib/oc/state/ext/bench","config_dir":"/etc/oc","executor_dirs":{"shell":"/var/lib/oc/runs/shell"},"artifact_window":2}`

// handshakeCases are initialize and configure params as peers might send
// them: the direct decoders must take the common ones and agree with
// json.Unmarshal on every one.
var handshakeCases = []struct {
	name   string
	in     string
	direct bool // decoded without json.Unmarshal's help, as both types
}{
	{"daemon_initialize", daemonInitialize, true},
	{"empty", `{}`, true},
	{"empty_spaced", " { } ", true},
	{"spaced", " { \"protocol_versions\" : [ 1 , 2 ] ,\n\"host\" : { \"version\" : \"v\" , \"name\" : \"h\" } } \r\n", true},
	{"every_initialize_member", `{"protocol_versions":[],"host":{},"state_dir":"s","config_dir":"c","executor_dirs":{},"resource_dirs":{"a":"1","b":"2"},"container_dirs":{"é":"ü"},"container_host":"h","artifact_window":-3}`, true},
	{"configure", `{"generation":{"id":7,"hash":"abc"},"entries":[{"scope":"s","type":"t","name":"n","config":{"a":[1,{"b":null}]},"connection":"c","binding_connections":["x","y"]}],"connections":[{"name":"gh","type":"github","config":{ "org" : "x" },"secrets":["token"]}],"disabled":[],"public_url":"https://x","dry_run":true,"kv":{"stored":1,"declared":2}}`, true},
	{"configure_small", `{"generation":{"id":0},"kv":{"stored":0,"declared":0}}`, true},
	{"configure_empty_lists", `{"entries":[],"connections":[],"disabled":[{}],"dry_run":false}`, true},
	{"config_scalar", `{"entries":[{"config":12.5e3}]}`, true},
	{"largest_direct_int", `{"artifact_window":999999999}`, true},
	{"smallest_direct_int", `{"kv":{"stored":-999999999}}`, true},
	{"ten_digits", `{"artifact_window":1000000000}`, false},
	{"int_overflow", `{"artifact_window":99999999999999999999}`, false},
	{"int_fraction", `{"artifact_window":1.0}`, false},
	{"int_exponent", `{"artifact_window":1e2}`, false},
	{"minus_zero", `{"artifact_window":-0}`, false},
	{"leading_zero", `{"artifact_window":01}`, false},
	{"int_string", `{"artifact_window":"2"}`, false},
	{"version_fraction", `{"protocol_versions":[1.5]}`, false},
	{"null_member", `{"state_dir":null}`, false},
	{"null_versions", `{"protocol_versions":null}`, false},
	{"null_config", `{"entries":[{"config":null}]}`, false},
	{"null_map", `{"executor_dirs":null}`, false},
	{"escaped_string", `{"state_dir":"a\/b"}`, false},
	{"unicode_escape", `{"state_dir":"\u00e9"}`, false},
	{"escaped_name", `{"st\u0061te_dir":"s"}`, false},
	{"case_variant", `{"State_Dir":"s"}`, false},
	{"unknown_member", `{"state_dir":"s","later":1}`, false},
	{"unknown_nested", `{"host":{"name":"h","os":"linux"}}`, false},
	{"twice", `{"state_dir":"a","state_dir":"b"}`, false},
	{"twice_nested", `{"kv":{"stored":1,"stored":2}}`, false},
	{"map_key_twice", `{"executor_dirs":{"a":"1","a":"2"}}`, false},
	{"map_key_escaped", `{"executor_dirs":{"\u0061":"1"}}`, false},
	{"map_key_not_utf8", "{\"executor_dirs\":{\"\xff\":\"1\"}}", false},
	{"map_key_control", "{\"executor_dirs\":{\"a\tb\":\"1\"}}", false},
	{"map_value_number", `{"executor_dirs":{"a":1}}`, false},
	{"string_not_utf8", "{\"state_dir\":\"\xc3\"}", false},
	{"string_control", "{\"state_dir\":\"a\nb\"}", false},
	{"config_twice_inside", `{"entries":[{"config":{"a":1,"a":2}}]}`, false},
	{"config_invalid", `{"entries":[{"config":{"a":}}]}`, false},
	{"dry_run_string", `{"dry_run":"true"}`, false},
	{"trailing_comma", `{"state_dir":"s",}`, false},
	{"trailing_comma_array", `{"protocol_versions":[1,]}`, false},
	{"trailing_bytes", `{} {}`, false},
	{"unterminated", `{"protocol_versions":[1`, false},
	{"array", `[]`, false},
	{"not_json", `nope`, false},
}

// TestHandshakeParamsDecode pins which params the direct decoders take
// themselves and that every one decodes exactly as json.Unmarshal decodes
// it, errors included.
func TestHandshakeParamsDecode(t *testing.T) {
	for _, tc := range handshakeCases {
		t.Run(tc.name, func(t *testing.T) {
			var ip InitializeParams
			var cp ConfigureParams
			gotI, gotC := ip.decode([]byte(tc.in)), cp.decode([]byte(tc.in))
			// A case is direct when the type it was written for takes it.
			if direct := gotI || gotC; direct != tc.direct {
				t.Errorf("decoded directly: %v, want %v", direct, tc.direct)
			}
			compareHandshakeDecode(t, []byte(tc.in))
		})
	}
}

// TestHandshakeParamsDecodeRandom encodes randomly filled params with
// json.Marshal and wants the direct decoders to take most of them and to
// agree with json.Unmarshal on all.
func TestHandshakeParamsDecodeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	seen := map[string]bool{}
	direct := 0
	const cases = 2000
	for range cases {
		var ip InitializeParams
		var cp ConfigureParams
		fillRandom(r, reflect.ValueOf(&ip).Elem(), "InitializeParams", seen)
		fillRandom(r, reflect.ValueOf(&cp).Elem(), "ConfigureParams", seen)
		for _, v := range []any{ip, cp} {
			raw, err := json.Marshal(v)
			if err != nil {
				continue
			}
			compareHandshakeDecode(t, raw)
			var di InitializeParams
			var dc ConfigureParams
			if di.decode(raw) || dc.decode(raw) {
				direct++
			}
		}
	}
	if direct < cases/2 {
		t.Fatalf("only %d of %d params were decoded directly", direct, 2*cases)
	}
	var missing []string
	walkFields(reflect.TypeFor[InitializeParams](), "InitializeParams", func(p string) {
		if !seen[p] {
			missing = append(missing, p)
		}
	})
	walkFields(reflect.TypeFor[ConfigureParams](), "ConfigureParams", func(p string) {
		if !seen[p] {
			missing = append(missing, p)
		}
	})
	if len(missing) > 0 {
		t.Fatalf("fields never filled: %v", missing)
	}
}

// TestHandshakeDecodeIntoNonZero pins that decoding into params that
// already hold something is json.Unmarshal's merge.
func TestHandshakeDecodeIntoNonZero(t *testing.T) {
	got := InitializeParams{ContainerHost: "kept", ExecutorDirs: map[string]string{"old": "x"}}
	want := InitializeParams{ContainerHost: "kept", ExecutorDirs: map[string]string{"old": "x"}}
	if err := json.Unmarshal([]byte(daemonInitialize), &want); err != nil {
		t.Fatal(err)
	}
	if err := got.UnmarshalJSONOnePass([]byte(daemonInitialize)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.ExecutorDirs["old"] != "x" {
		t.Fatalf("decoded %+v, json.Unmarshal %+v", got, want)
	}
}

// TestHandshakeDecodeOwnsItsBytes: an entry's config is a copy, so the
// read buffer the params came in may be reused.
func TestHandshakeDecodeOwnsItsBytes(t *testing.T) {
	raw := []byte(`{"entries":[{"config":{"a":1}}]}`)
	var p ConfigureParams
	if err := p.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	copy(raw, strings.Repeat("x", len(raw)))
	if string(p.Entries[0].Config) != `{"a":1}` {
		t.Fatalf("config changed with the buffer: %s", p.Entries[0].Config)
	}
}

// TestConfigureResultAppendJSONWritesWhatMarshalWrites holds the direct
// encoder to json.Marshal over randomly filled results.
func TestConfigureResultAppendJSONWritesWhatMarshalWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	seen := map[string]bool{}
	for i := range 1000 {
		var res ConfigureResult
		fillRandom(r, reflect.ValueOf(&res).Elem(), "ConfigureResult", seen)
		compareAppend(t, i, res)
	}
	compareAppend(t, -1, ConfigureResult{})
	compareAppend(t, -1, ShutdownResult{})
	walkFields(reflect.TypeFor[ConfigureResult](), "ConfigureResult", func(p string) {
		if !seen[p] {
			t.Errorf("field never filled: %s", p)
		}
	})
}

// schemaCases are operation input schemas: isObjectSchema must answer for
// each as json decides, and decide the common ones without json.
var schemaCases = []struct {
	in   string
	sure bool
}{
	{`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, true},
	{`{"properties":{"type":{"type":"string"}},"type":"object"}`, true},
	{`{ "type" : "object" }`, true},
	{`{"type":"string"}`, true},
	{`{"type":["object","null"]}`, true},
	{`{}`, true},
	{`{"type":"obj\u0065ct"}`, false},
	{`{"typ\u0065":"object"}`, false},
	{`{"type":"object","type":"string"}`, false},
	{`{"Type":"object"}`, true},
	{`{"type":"object"} `, false},
	{`{"type":"object",}`, false},
	{`{"type":"object"`, false},
	{"{\"type\":\"\xff\"}", false},
}

// TestIsObjectSchemaAgreesWithJSON: the direct check answers as the json
// decoding it stands in for, and is sure of the common schemas.
func TestIsObjectSchemaAgreesWithJSON(t *testing.T) {
	for _, tc := range schemaCases {
		_, sure := objectSchemaDirect([]byte(tc.in))
		if sure != tc.sure {
			t.Errorf("%s: sure %v, want %v", tc.in, sure, tc.sure)
		}
		compareObjectSchema(t, []byte(tc.in))
	}
}

// FuzzHandshakeDecode holds the direct decoders and the schema check to
// json on anything.
func FuzzHandshakeDecode(f *testing.F) {
	for _, tc := range handshakeCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range schemaCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		compareHandshakeDecode(t, raw)
		compareObjectSchema(t, raw)
	})
}

func compareHandshakeDecode(t *testing.T, raw []byte) {
	t.Helper()
	compareOnePass[InitializeParams](t, raw)
	compareOnePass[ConfigureParams](t, raw)
	compareOnePass[ShutdownParams](t, raw)
}

func compareOnePass[T any, P interface {
	*T
	UnmarshalJSONOnePass([]byte) error
}](t *testing.T, raw []byte) {
	t.Helper()
	var want, got T
	wantErr := json.Unmarshal(raw, &want)
	gotErr := P(&got).UnmarshalJSONOnePass(raw)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%T %q: error %v, json.Unmarshal's %v", got, raw, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T %q: decoded %+v, json.Unmarshal %+v", got, raw, got, want)
	}
}

func compareObjectSchema(t *testing.T, raw []byte) {
	t.Helper()
	v := jsontext.Value(raw)
	if v.Kind() != '{' {
		return
	}
	var s struct {
		Type jsontext.Value `json:"type"`
	}
	var typ string
	want := json.Unmarshal(v, &s) == nil && json.Unmarshal(s.Type, &typ) == nil && typ == "object"
	if is, sure := objectSchemaDirect(raw); sure && is != want {
		t.Fatalf("%q: direct check says %v, json %v", raw, is, want)
	}
	if got := isObjectSchema(v); got != want {
		t.Fatalf("%q: isObjectSchema %v, json %v", raw, got, want)
	}
}
