package pebblekv

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// result is an OpResult of operation with output data.
func result(operation, data string) OpResult {
	return OpResult{Operation: operation, Output: protocol.Payload{Schema: "out.v1", Data: jsontext.Value(data)}, At: t0}
}

// opResultOf reads (pkg, requestID)'s result: its output data, "" for none.
func opResultOf(t *testing.T, db *DB, pkg, requestID string) string {
	t.Helper()
	var out string
	view(t, db, func(r *Reader) error {
		res, found, err := r.OpResult(pkg, requestID)
		if found {
			out = string(res.Output.Data)
		}
		return err
	})
	return out
}

func TestPutOpResultIsWrittenOncePerPackageAndRequestID(t *testing.T) {
	first := result("issue.create", `{"n":1}`)
	later := first
	later.At = first.At.Add(time.Second)
	for _, tc := range []struct {
		name   string
		second OpResult
		want   *protocol.Error // nil: accepted, changing nothing
	}{
		{"the same result again changes nothing", first, nil},
		{"the same result at the same instant in another zone changes nothing",
			func() OpResult { r := first; r.At = r.At.In(time.FixedZone("x", 3600)); return r }(), nil},
		{"another output is a conflict", result("issue.create", `{"n":2}`), protocol.ErrConflict},
		{"another operation is a conflict", result("issue.close", `{"n":1}`), protocol.ErrConflict},
		{"the same output committed later is a conflict", later, protocol.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			update(t, db, func(tx *Tx) error { return tx.PutOpResult("forge", "req-1", first) })
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutOpResult("forge", "req-1", tc.second); return nil })
			if tc.want == nil && err != nil {
				t.Fatalf("second PutOpResult: %v, want accepted", err)
			}
			if tc.want != nil {
				wantCode(t, err, tc.want)
			}
			if !maps.Equal(before, dump(t, db)) {
				t.Error("the second PutOpResult changed the store; the first result must stay")
			}
			if got := opResultOf(t, db, "forge", "req-1"); got != `{"n":1}` {
				t.Errorf("OpResult = %s, want the first result", got)
			}
		})
	}
}

func TestOpResultsOfPackagesAreApart(t *testing.T) {
	db := openDB(t, nil)
	update(t, db, func(tx *Tx) error {
		// "a"+"bc" and "ab"+"c" join to the same bytes; the key must not.
		for _, w := range []struct{ pkg, req, data string }{
			{"forge", "req-1", `"forge"`}, {"a", "bc", `"a/bc"`}, {"ab", "c", `"ab/c"`},
		} {
			if err := tx.PutOpResult(w.pkg, w.req, result("op", w.data)); err != nil {
				return err
			}
		}
		// Another package's result under the same request ID is its own,
		// not a conflict.
		return tx.PutOpResult("mail", "req-1", result("op", `"mail"`))
	})
	for _, tc := range []struct{ pkg, req, want string }{
		{"forge", "req-1", `"forge"`},
		{"mail", "req-1", `"mail"`},
		{"a", "bc", `"a/bc"`},
		{"ab", "c", `"ab/c"`},
		{"chat", "req-1", ""},
		{"forge", "req-2", ""},
		{"a", "b", ""},
		{"", "req-1", ""},
		{"forge", "", ""},
	} {
		if got := opResultOf(t, db, tc.pkg, tc.req); got != tc.want {
			t.Errorf("OpResult(%q, %q) = %q, want %q", tc.pkg, tc.req, got, tc.want)
		}
	}
}

func TestPutOpResultRefusesInvalidResultsAndWritesNothing(t *testing.T) {
	big := jsontext.Value(`"` + strings.Repeat("o", protocol.MaxPayloadBytes) + `"`)
	for _, tc := range []struct {
		name, pkg, req string
		res            OpResult
		want           *protocol.Error
	}{
		{"no package", "", "req-1", result("op", `1`), protocol.ErrInvalid},
		{"no request ID", "forge", "", result("op", `1`), protocol.ErrInvalid},
		{"a request ID over MaxKeyBytes", "forge", strings.Repeat("r", protocol.MaxKeyBytes+1), result("op", `1`), protocol.ErrInvalid},
		{"no operation", "forge", "req-1", result("", `1`), protocol.ErrInvalid},
		{"output that is not JSON", "forge", "req-1", result("op", `{"a":`), protocol.ErrInvalid},
		{"output over MaxPayloadBytes", "forge", "req-1", OpResult{Operation: "op", Output: protocol.Payload{Data: big}}, protocol.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, nil)
			before := dump(t, db)
			var err error
			update(t, db, func(tx *Tx) error { err = tx.PutOpResult(tc.pkg, tc.req, tc.res); return nil })
			wantCode(t, err, tc.want)
			if !maps.Equal(before, dump(t, db)) {
				t.Error("a refused PutOpResult changed the store")
			}
		})
	}
}
