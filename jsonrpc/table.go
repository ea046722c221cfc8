package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// HandlerFunc serves one method. params is the request's params as sent
// (nil when absent); the result is encoded as the answer. Return an error
// made with protocol.Errorf (or wrapping a protocol sentinel) to refuse with
// its code; any other error crosses as internal with no detail.
type HandlerFunc func(ctx context.Context, params jsontext.Value) (any, error)

// Table maps method names to handlers. Both sides of the wire build one: the
// SDK for the methods an extension serves, the host for the callbacks it
// answers. A Table is filled before its connection starts and then only read.
type Table struct {
	handlers map[string]HandlerFunc
	names    map[string]string // each method's own name string (methodName)
	// under serves the methods handlers does not (Layer); nil for a table
	// of its own.
	under *Table
}

// Layer returns a table serving top's methods and, for every other, the
// one under serves: a host's table over its defaults. Nothing is copied,
// so layering costs nothing per connection; both tables are read as they
// are when each call arrives. Register nothing on the layered table (it
// panics): register on top or under.
func Layer(top, under *Table) *Table {
	if top.under != nil {
		// top is layered itself: what it does not serve, its own under
		// does, and under comes after that.
		under = Layer(top.under, under)
	}
	return &Table{handlers: top.handlers, names: top.names, under: under}
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{handlers: make(map[string]HandlerFunc), names: make(map[string]string)}
}

// HandleRaw registers fn for method. Registering a method twice is a
// programming error and panics with the method's name.
func (t *Table) HandleRaw(method string, fn HandlerFunc) *Table {
	if fn == nil {
		panic(fmt.Sprintf("jsonrpc: Handle %q: nil handler", method))
	}
	if t.under != nil {
		panic(fmt.Sprintf("jsonrpc: Handle %q: a layered table takes no handlers; register on one of its layers", method))
	}
	if _, dup := t.handlers[method]; dup {
		panic(fmt.Sprintf("jsonrpc: Handle %q: registered twice", method))
	}
	t.handlers[method] = fn
	t.names[method] = method
	return t
}

// Handle registers a typed handler: params are decoded into P (names match
// exactly; members P does not have are ignored, so a newer peer may add
// fields), and the R it returns is the answer. Params that cannot be decoded
// are refused invalid_params naming the field, before fn runs.
func Handle[P, R any](t *Table, method string, fn func(ctx context.Context, params P) (R, error)) {
	t.HandleRaw(method, func(ctx context.Context, raw jsontext.Value) (any, error) {
		var p P
		if err := DecodeParams(method, raw, &p); err != nil {
			return nil, err
		}
		return fn(ctx, p)
	})
}

// Serve registers fn as the handler of d's method, typed by d as Handle
// types it: the server side of a method descriptor.
func Serve[P, R any](t *Table, d protocol.Desc[P, R], fn func(ctx context.Context, params P) (R, error)) {
	Handle(t, d.Name, fn)
}

// Invoke calls d's method on c with params and decodes the answer into R:
// the caller side of a method descriptor. Errors are Call's.
func Invoke[P, R any](ctx context.Context, c *Conn, d protocol.Desc[P, R], params P) (R, error) {
	var r R
	if err := c.Call(ctx, d.Name, params, &r); err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}

// onePassDecoder is params that decode themselves from the bytes as sent,
// checking them as they go, as json.Unmarshal would
// (protocol.ArtifactWriteParams): json.Unmarshal's scanner would first read
// the whole value, an artifact chunk's base64 included, only to validate it.
type onePassDecoder interface {
	UnmarshalJSONOnePass(data []byte) error
}

// DecodeParams decodes raw params into v, or refuses them invalid_params
// with the JSON path of the first member that does not fit.
func DecodeParams(method string, raw jsontext.Value, v any) error {
	if len(raw) == 0 {
		return nil
	}
	var err error
	if d, ok := v.(onePassDecoder); ok {
		err = d.UnmarshalJSONOnePass(raw)
	} else {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return protocol.Errorf(protocol.ErrInvalidParams, "%s: params %s", method, decodeProblem(err))
	}
	return nil
}

// decodeProblem renders a decoding error as "at /path: what".
func decodeProblem(err error) string {
	var se *json.SemanticError
	if errors.As(err, &se) {
		path := string(se.JSONPointer)
		if path == "" {
			path = "/"
		}
		what := "has the wrong type"
		if se.Err != nil {
			what = se.Err.Error()
		} else if se.JSONKind != 0 && se.GoType != nil {
			what = fmt.Sprintf("is a JSON %s where %s was expected", se.JSONKind, se.GoType)
		}
		return fmt.Sprintf("at %s: %s", path, what)
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return fmt.Sprintf("are not valid JSON at %s: %v", syn.JSONPointer, syn.Err)
	}
	return err.Error()
}

// name is the table's own string for a method it serves, whose name is
// b's bytes.
func (t *Table) name(b []byte) (string, bool) {
	for ; t != nil; t = t.under {
		if name, ok := t.names[string(b)]; ok {
			return name, true
		}
	}
	return "", false
}

// Lookup returns the handler for method.
func (t *Table) Lookup(method string) (HandlerFunc, bool) {
	for ; t != nil; t = t.under {
		if h, ok := t.handlers[method]; ok {
			return h, true
		}
	}
	return nil, false
}

// Has reports whether method has a handler.
func (t *Table) Has(method string) bool {
	_, ok := t.Lookup(method)
	return ok
}

// Methods lists the registered methods (of every layer), sorted.
func (t *Table) Methods() []string {
	var out []string
	for l := t; l != nil; l = l.under {
		for m := range l.handlers {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
