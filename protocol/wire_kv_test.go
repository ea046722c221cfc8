package protocol

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	json "github.com/go-json-experiment/json"
)

// kvCases are kv.commit params as peers might send them: the one pass must
// take the common shapes and agree with json.Unmarshal on every one.
var kvCases = []struct {
	name    string
	in      string
	onePass bool // the one pass decodes it without json.Unmarshal's help
}{
	{"go_sdk_put", `{"puts":[{"namespace":"kvbench","key":"w0-00000001","value":"dnZ2dg=="}]}`, true},
	{"all_three", `{"checks":[{"namespace":"n","key":"k","version":"v1"},{"namespace":"n","key":"a","absent":true}],"puts":[{"namespace":"n","key":"k","value":"AAEC"}],"deletes":[{"namespace":"n","key":"old"}]}`, true},
	{"spaced", " {\n\t\"puts\" : [ { \"key\" : \"k\" , \"namespace\":\"n\",\"value\":\"AAAA\" } ] } ", true},
	{"unicode", `{"puts":[{"namespace":"n","key":"clé ✓","value":"AAAA"}]}`, true},
	{"absent_false", `{"checks":[{"namespace":"n","key":"k","absent":false}]}`, true},
	{"missing_members", `{"puts":[{"key":"k","value":"AAAA"}],"deletes":[{"namespace":"n"}]}`, true},
	{"emissions", `{"puts":[{"namespace":"n","key":"k","value":"AAAA"}],"emissions":[{"scope":"s","source":"x","delivery_id":"d","type":"t","payload":{"schema":"t.v1","data":{}}}]}`, false},
	{"escaped_key", `{"puts":[{"namespace":"n","key":"a\"b","value":"AAAA"}]}`, false},
	{"escaped_name", `{"p\u0075ts":[{"namespace":"n","key":"k","value":"AAAA"}]}`, false},
	{"line_separator_escape", `{"puts":[{"namespace":"n","key":"\u2028","value":"AAAA"}]}`, false},
	{"empty_value", `{"puts":[{"namespace":"n","key":"k","value":""}]}`, false},
	{"null_value", `{"puts":[{"namespace":"n","key":"k","value":null}]}`, false},
	{"unpadded_value", `{"puts":[{"namespace":"n","key":"k","value":"aGk"}]}`, false},
	{"not_base64", `{"puts":[{"namespace":"n","key":"k","value":"A*AA"}]}`, false},
	{"empty_list", `{"puts":[]}`, false},
	{"null_list", `{"puts":null}`, false},
	{"empty_object", `{}`, false},
	{"empty_element", `{"puts":[{}]}`, false},
	{"puts_twice", `{"puts":[{"namespace":"n","key":"a","value":"AAAA"}],"puts":[{"namespace":"n","key":"b","value":"AAAA"}]}`, false},
	{"key_twice", `{"puts":[{"namespace":"n","key":"a","key":"b","value":"AAAA"}]}`, false},
	{"unknown_member", `{"puts":[{"namespace":"n","key":"k","value":"AAAA","ttl":5}]}`, false},
	{"unknown_top", `{"puts":[{"namespace":"n","key":"k","value":"AAAA"}],"x":1}`, false},
	{"capitalized", `{"Puts":[{"namespace":"n","key":"k","value":"AAAA"}]}`, false},
	{"key_number", `{"puts":[{"namespace":"n","key":5,"value":"AAAA"}]}`, false},
	{"absent_string", `{"checks":[{"namespace":"n","key":"k","absent":"true"}]}`, false},
	{"absent_truex", `{"checks":[{"namespace":"n","key":"k","absent":truex}]}`, false},
	{"trailing_comma", `{"puts":[{"namespace":"n","key":"k","value":"AAAA"},]}`, false},
	{"trailing_bytes", `{"puts":[{"namespace":"n","key":"k","value":"AAAA"}]} x`, false},
	{"unterminated", `{"puts":[{"namespace":"n","key":"k","value":"AAAA"}]`, false},
	{"invalid_utf8", "{\"puts\":[{\"namespace\":\"n\",\"key\":\"\xff\",\"value\":\"AAAA\"}]}", false},
	{"control_char", "{\"puts\":[{\"namespace\":\"n\",\"key\":\"a\tb\",\"value\":\"AAAA\"}]}", false},
	{"array", `[{"puts":[]}]`, false},
}

// TestKVCommitOnePassAgreesWithUnmarshal pins that the one pass decodes
// what it should itself and that every params decodes exactly as
// json.Unmarshal decodes it, errors included.
func TestKVCommitOnePassAgreesWithUnmarshal(t *testing.T) {
	for _, tc := range kvCases {
		t.Run(tc.name, func(t *testing.T) {
			var fast KVCommitParams
			if got := fast.unmarshalFlat([]byte(tc.in)); got != tc.onePass {
				t.Errorf("one pass took it: %v, want %v", got, tc.onePass)
			}
			compareOnePass[KVCommitParams](t, []byte(tc.in))
		})
	}
	// Into params already holding a put, json.Unmarshal's merge.
	p := KVCommitParams{Deletes: []KVDelete{{Namespace: "n", Key: "old"}}}
	want := KVCommitParams{Deletes: []KVDelete{{Namespace: "n", Key: "old"}}}
	raw := []byte(`{"puts":[{"namespace":"n","key":"k","value":"AAAA"}]}`)
	if err := p.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("into non-zero params: %+v, json.Unmarshal %+v (%v)", p, want, err)
	}
}

// TestKVCommitOnePassOwnsItsBytes pins that nothing decoded aliases the
// params' buffer, which the connection reuses for the next message.
func TestKVCommitOnePassOwnsItsBytes(t *testing.T) {
	raw := []byte(`{"puts":[{"namespace":"n","key":"k","value":"AAAAAAAA"}]}`)
	var p KVCommitParams
	if err := p.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'A'
	}
	if want := []KVPut{{Namespace: "n", Key: "k", Value: make([]byte, 6)}}; !reflect.DeepEqual(p.Puts, want) {
		t.Fatalf("the params changed with the buffer they came from: %+v", p)
	}
}

// TestKVCommitOnePassTakesRandomBatches encodes 2,000 random batches of
// checks, puts and deletes as json.Marshal does: the one pass takes every
// one the encoder wrote without an escape, and each decodes as
// json.Unmarshal decodes it.
func TestKVCommitOnePassTakesRandomBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 2026))
	plain := []string{"a", "Z", "0", "-", ".", "/", "é", "✓", "\u2028", "<"}
	escaped := []string{"\"", "\\", "\n", "\x01"}
	word := func() string {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			if r.IntN(100) == 0 {
				b.WriteString(escaped[r.IntN(len(escaped))])
			} else {
				b.WriteString(plain[r.IntN(len(plain))])
			}
		}
		return b.String()
	}
	taken := 0
	for range 2000 {
		var p KVCommitParams
		for range r.IntN(3) {
			c := KVCheck{Namespace: word(), Key: word()}
			if r.IntN(2) == 0 {
				c.Version = word()
			} else {
				c.Absent = true
			}
			p.Checks = append(p.Checks, c)
		}
		for range r.IntN(4) {
			v := make([]byte, 1+r.IntN(80))
			for i := range v {
				v[i] = byte(r.Uint32())
			}
			p.Puts = append(p.Puts, KVPut{Namespace: word(), Key: word(), Value: v})
		}
		for range r.IntN(3) {
			p.Deletes = append(p.Deletes, KVDelete{Namespace: word(), Key: word()})
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var fast KVCommitParams
		took := fast.unmarshalFlat(raw)
		empty := len(p.Checks)+len(p.Puts)+len(p.Deletes) == 0
		if want := !strings.Contains(string(raw), `\`) && !empty; took != want {
			t.Fatalf("%s: one pass took it %v, want %v", raw, took, want)
		}
		if took {
			taken++
			if !reflect.DeepEqual(fast, p) {
				t.Fatalf("%s: one pass decoded %+v, want %+v", raw, fast, p)
			}
		}
		compareOnePass[KVCommitParams](t, raw)
	}
	if taken < 1000 {
		t.Fatalf("the one pass took only %d of 2000 batches", taken)
	}
}

// FuzzKVCommitOnePass checks the one pass against json.Unmarshal on
// anything.
func FuzzKVCommitOnePass(f *testing.F) {
	for _, tc := range kvCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(compareOnePass[KVCommitParams])
}

// BenchmarkKVCommitDecode sets the one pass against json.Unmarshal on the
// kvbench extension's batch.
func BenchmarkKVCommitDecode(b *testing.B) {
	raw := []byte(`{"puts":[{"namespace":"kvbench","key":"w0-00000001","value":"dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dnZ2dg=="}]}`)
	b.Run("one_pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p KVCommitParams
			if err := p.UnmarshalJSONOnePass(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p KVCommitParams
			if err := json.Unmarshal(raw, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestKVCommitAppendJSONIsMarshal holds both encoders to json.Marshal's
// bytes on random batches and results, nil and empty values, strings that
// need escapes and strings that are not UTF-8 (which both refuse) among
// them, and emissions (which go to json.Marshal).
func TestKVCommitAppendJSONIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 12))
	parts := []string{"a", "é", "\"", "\\", "\n", "\u2028", "<", "\xff", "\x01"}
	word := func() string {
		var b strings.Builder
		for range r.IntN(5) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		return b.String()
	}
	value := func() []byte {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		v := make([]byte, r.IntN(40))
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		return v
	}
	for range 3000 {
		var p KVCommitParams
		for range r.IntN(3) {
			p.Checks = append(p.Checks, KVCheck{Namespace: word(), Key: word(), Version: word(), Absent: r.IntN(2) == 0})
		}
		for range r.IntN(3) {
			p.Puts = append(p.Puts, KVPut{Namespace: word(), Key: word(), Value: value()})
		}
		for range r.IntN(3) {
			p.Deletes = append(p.Deletes, KVDelete{Namespace: word(), Key: word()})
		}
		if r.IntN(10) == 0 {
			p.Emissions = []Emission{{Scope: word(), Source: "s", DeliveryID: "d", Type: "t", Payload: Payload{Schema: "t.v1", Data: []byte(`{}`)}}}
		}
		if r.IntN(8) == 0 {
			p.Checks = []KVCheck{}
		}
		sameAsMarshal(t, p, p.AppendJSON)
		res := KVCommitResult{}
		for range r.IntN(3) {
			res.Versions = append(res.Versions, word())
		}
		if r.IntN(10) == 0 {
			res.Emissions = []EmissionResult{{EventID: word(), Added: true}}
		}
		sameAsMarshal(t, res, res.AppendJSON)
	}
}

// FuzzKVCommitAppendJSON holds AppendJSON to json.Marshal on anything one
// check, put and delete can hold.
func FuzzKVCommitAppendJSON(f *testing.F) {
	f.Add("n", "k", "v1", true, []byte("value"), "n2", "k2")
	f.Add("\xff", "\"", "", false, []byte(nil), "\u2028", "")
	f.Fuzz(func(t *testing.T, ns, key, version string, absent bool, value []byte, dns, dkey string) {
		p := KVCommitParams{
			Checks:  []KVCheck{{Namespace: ns, Key: key, Version: version, Absent: absent}},
			Puts:    []KVPut{{Namespace: ns, Key: key, Value: value}},
			Deletes: []KVDelete{{Namespace: dns, Key: dkey}},
		}
		sameAsMarshal(t, p, p.AppendJSON)
		res := KVCommitResult{Versions: []string{version, key}}
		sameAsMarshal(t, res, res.AppendJSON)
	})
}

func sameAsMarshal(t *testing.T, v any, appendJSON func([]byte) ([]byte, error)) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, gotErr := appendJSON([]byte("prefix"))
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%+v: error %v, json.Marshal's %v", v, gotErr, wantErr)
	}
	if wantErr == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("%+v:\n got %s\nwant prefix%s", v, got, want)
	}
}

// kvResultCases are kv.commit results as hosts might send them.
var kvResultCases = []struct {
	name    string
	in      string
	onePass bool
}{
	{"one_version", `{"versions":["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]}`, true},
	{"two_spaced", ` { "versions" : [ "a" , "b" ] } `, true},
	{"empty_object", `{}`, false},
	{"emissions", `{"versions":["a"],"emissions":[{"event_id":"e","added":true}]}`, false},
	{"versions_twice", `{"versions":["a"],"versions":["b"]}`, false},
	{"escaped", `{"versions":["a\u0062"]}`, false},
	{"empty_list", `{"versions":[]}`, false},
	{"null", `{"versions":null}`, false},
	{"number", `{"versions":[1]}`, false},
	{"unknown", `{"versions":["a"],"x":true}`, false},
	{"trailing", `{"versions":["a"]}]`, false},
	{"invalid_utf8", "{\"versions\":[\"\xfe\"]}", false},
}

// TestKVCommitResultOnePassAgreesWithUnmarshal: the result's one pass
// takes what hosts write and decodes everything as json.Unmarshal does.
func TestKVCommitResultOnePassAgreesWithUnmarshal(t *testing.T) {
	for _, tc := range kvResultCases {
		t.Run(tc.name, func(t *testing.T) {
			var fast KVCommitResult
			if got := fast.unmarshalFlat([]byte(tc.in)); got != tc.onePass {
				t.Errorf("one pass took it: %v, want %v", got, tc.onePass)
			}
			compareOnePass[KVCommitResult](t, []byte(tc.in))
		})
	}
	// Into a result already holding versions, json.Unmarshal's merge.
	r := KVCommitResult{Versions: []string{"old"}}
	want := r
	raw := []byte(`{"versions":["new"]}`)
	if err := r.UnmarshalJSONOnePass(raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("into a non-zero result: %+v, json.Unmarshal %+v (%v)", r, want, err)
	}
}

// FuzzKVCommitResultOnePass checks the result's one pass against
// json.Unmarshal on anything.
func FuzzKVCommitResultOnePass(f *testing.F) {
	for _, tc := range kvResultCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(compareOnePass[KVCommitResult])
}
