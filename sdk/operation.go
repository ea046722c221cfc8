package sdk

import (
	"context"
	"encoding"
	"fmt"
	"reflect"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// OperationHandler serves one toolbelt operation. Make one with Handler.
type OperationHandler struct {
	op *operation
}

// operation is a registered operation: its input schema, how to decode and
// run it, and the schema its output is sent under.
type operation struct {
	inputSchema     *Schema
	inputSchemaJSON jsontext.Value
	outputSchema    string
	call            func(ctx context.Context, r *Request, input protocol.Payload) (any, error)
	// answer is call with its output encoded as operation.call answers it,
	// under schema unless the output is a Payload.
	answer func(ctx context.Context, r *Request, input protocol.Payload, schema string) (protocol.OperationCallResult, error)
	// kind is the operation's kind: protocol.OperationHandler unless
	// Waiter or Emit set another.
	kind string
	// emit plans an emit operation's Event; commit, when set, answers its
	// emit.commit (emit.go).
	emit   func(ctx context.Context, r *Request, input protocol.Payload) (EmitDraft, error)
	commit CommitFunc
}

// Handler makes an operation handler from a typed function. The input's data
// is checked against In's JSON Schema (SchemaOf) and decoded strictly: a
// missing required field, a field In does not have, or a value of the wrong
// type is refused bad_request naming the field, before fn runs. The Out fn
// returns is sent as the output's data. In must be a struct or Payload (to
// handle the raw payload); anything else panics when the extension is
// built. fn's Request carries the call's Authority and RequestID and the
// Host.
func Handler[In, Out any](fn func(ctx context.Context, r *Request, in In) (Out, error)) OperationHandler {
	t := reflect.TypeFor[In]()
	raw := t == payType
	if !raw && t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk: Handler: input %s must be a struct or sdk.Payload", t))
	}
	var schema *Schema
	if raw {
		schema = &Schema{Type: "object"}
	} else {
		schema = SchemaOf[In]()
	}
	op := &operation{inputSchema: schema, inputSchemaJSON: schema.JSON(), kind: protocol.OperationHandler}
	dec := newInputDecoder(schema, t)
	out := newFlatCodec(reflect.TypeFor[Out]())
	decode := func(input protocol.Payload, in *In) error {
		if raw {
			reflect.ValueOf(in).Elem().Set(reflect.ValueOf(input))
			return nil
		}
		return decodeInput(dec, input.Data, in)
	}
	op.call = func(ctx context.Context, r *Request, input protocol.Payload) (any, error) {
		var in In
		if err := decode(input, &in); err != nil {
			return nil, err
		}
		return fn(ctx, r, in)
	}
	frames := sync.Pool{New: func() any { return new(frame[In, Out]) }}
	op.answer = func(ctx context.Context, r *Request, input protocol.Payload, schema string) (protocol.OperationCallResult, error) {
		f := frames.Get().(*frame[In, Out])
		defer frames.Put(f)
		err := decode(input, &f.in)
		in := f.in
		f.in = *new(In)
		if err != nil {
			return protocol.OperationCallResult{}, err
		}
		if f.out, err = fn(ctx, r, in); err != nil {
			f.out = *new(Out)
			return protocol.OperationCallResult{}, err
		}
		res, err := encodeOutput(schema, out, &f.out)
		f.out = *new(Out)
		return res, err
	}
	return OperationHandler{op: op}
}

// frame holds a call's input while it is decoded and its output while it
// is encoded, pooled per operation: both go to the JSON package by pointer,
// so they would otherwise be allocated on the heap on every call. It is
// zeroed before it goes back, to hold on to nothing of the call.
type frame[In, Out any] struct {
	in  In
	out Out
}

// strictInput reads operation inputs: exact names, nothing unknown.
var strictInput = json.JoinOptions(json.RejectUnknownMembers(true), json.MatchCaseInsensitiveNames(false))

// inputDecoder checks and decodes an operation's input against its schema.
type inputDecoder struct {
	schema *Schema
	// raw is schema compiled to check the encoded input in place; nil when
	// it cannot be, and every input takes decodeInput's two passes.
	raw *rawCheck
	// flat decodes an input raw accepts without the JSON package; nil
	// when the input type is not flat (newFlatCodec).
	flat *flatCodec
}

// newInputDecoder compiles schema for inputs decoded into t. A t whose
// decoding runs code of its own (an UnmarshalJSON, UnmarshalJSONFrom or
// UnmarshalText anywhere in it) keeps the two passes, so that code still
// runs once, and only on inputs the schema accepted.
func newInputDecoder(schema *Schema, t reflect.Type) *inputDecoder {
	d := &inputDecoder{schema: schema}
	if !decodesWithMethods(t, map[reflect.Type]bool{}) {
		d.raw = compileRaw(schema)
		d.flat = newFlatCodec(t)
	}
	return d
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	unmarshalerFromType = reflect.TypeFor[json.UnmarshalerFrom]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesWithMethods reports whether decoding into t can call a method of
// a type in it other than the JSON package's own (a jsontext.Value's, which
// copies the value) and time.Time's (the decoder has its own for times).
func decodesWithMethods(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == timeType || t == rawType || seen[t] {
		return false
	}
	seen[t] = true
	for _, m := range []reflect.Type{unmarshalerType, unmarshalerFromType, textUnmarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return decodesWithMethods(t.Elem(), seen)
	case reflect.Map:
		return decodesWithMethods(t.Key(), seen) || decodesWithMethods(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if decodesWithMethods(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// decodeInput decodes data into *v as decodeInputChecked does, in one
// pass when it can: a scan of data that proves the schema check would
// pass, then, for a flat input type, the flat codec's decode. Failing
// that, strictly into *v with the JSON package, then the scan. Anything
// else (a decode error, a check that fails or that the scan cannot prove)
// starts again from a zero *v through decodeInputChecked, so every outcome
// and error is the same.
func decodeInput[T any](d *inputDecoder, data jsontext.Value, v *T) error {
	if len(data) == 0 {
		data = jsontext.Value("{}")
	}
	if d.raw != nil {
		if d.flat != nil && d.raw.accepts(data) && d.flat.decode(data, reflect.ValueOf(v).Elem()) {
			return nil
		}
		var zero T
		*v = zero
		if json.Unmarshal(data, v, strictInput) == nil && d.raw.accepts(data) {
			return nil
		}
		*v = zero
	}
	return decodeInputChecked(d.schema, data, v)
}

// decodeInputChecked checks data against schema, then decodes it strictly
// into v.
func decodeInputChecked(schema *Schema, data jsontext.Value, v any) error {
	if len(data) == 0 {
		data = jsontext.Value("{}")
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return protocol.Errorf(protocol.ErrBadRequest, "input is not valid JSON: %v", err)
	}
	if err := schema.Check(generic); err != nil {
		return protocol.Errorf(protocol.ErrBadRequest, "input %v", err)
	}
	if err := json.Unmarshal(data, v, strictInput); err != nil {
		return protocol.Errorf(protocol.ErrBadRequest, "input %v", err)
	}
	return nil
}

// encodeOutput marshals an operation's output as the payload's data, or
// sends a Payload as it is. It takes the output by pointer: marshalling a
// value held in an interface would copy it to the heap twice (the boxing,
// then an addressable copy), for the same bytes.
func encodeOutput[Out any](schema string, flat *flatCodec, out *Out) (protocol.OperationCallResult, error) {
	if p, ok := any(*out).(protocol.Payload); ok {
		return protocol.OperationCallResult{Output: p}, nil
	}
	if flat != nil {
		if b, ok := flat.encode(nil, reflect.ValueOf(out).Elem()); ok {
			return protocol.OperationCallResult{Output: protocol.Payload{Schema: schema, Data: b}}, nil
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return protocol.OperationCallResult{}, fmt.Errorf("encoding output: %w", err)
	}
	return protocol.OperationCallResult{Output: protocol.Payload{Schema: schema, Data: b}}, nil
}
