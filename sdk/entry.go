package sdk

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/open-conduit/open-conduit/protocol"
)

// entryType is a registered entry type: how the SDK checks an entry's
// config when it is typed (EntryConfig), nil otherwise.
type entryType struct {
	check func(config jsontext.Value) error
}

// EntryOption sets an entry type's declaration.
type EntryOption func(*protocol.ExtensionType, *entryType)

// EntryType declares an entry type operators configure in scopes.
// Configure receives each generation's entries of it. With EntryConfig the
// type's config is typed: its fields are declared from the Go type, and the
// SDK refuses a config that does not fit before any Validate runs.
// Declaring a type twice panics.
func (x *Extension) EntryType(typ string, opts ...EntryOption) *Extension {
	if x.entries == nil {
		x.entries = make(map[string]*entryType)
	}
	if _, dup := x.entries[typ]; dup {
		panic(fmt.Sprintf("sdk: EntryType %q: registered twice", typ))
	}
	decl := protocol.ExtensionType{Type: typ}
	e := &entryType{}
	for _, o := range opts {
		o(&decl, e)
	}
	x.entries[typ] = e
	x.Manifest.Provides.Extensions = append(x.Manifest.Provides.Extensions, decl)
	return x
}

// Settings declares the top-level config fields of the entry type that are
// safe to show the operator, with their types and defaults.
func Settings(settings ...Setting) EntryOption {
	return func(d *protocol.ExtensionType, _ *entryType) { d.Settings = append(d.Settings, settings...) }
}

// EntryConfig types the entry type's config as C, a struct. It declares the
// type's fields from C (each by its json name, with its doc tag as help,
// required unless a pointer or tagged omitempty or omitzero), and the SDK
// answers validate for an entry of the type by decoding its config strictly
// into C: an unknown field, a value of the wrong type or a missing required
// field is refused invalid, naming the field, before the extension's own
// Validate runs. Read an entry's config with DecodeEntry[C]. A C that is
// not a struct panics.
func EntryConfig[C any]() EntryOption {
	t := reflect.TypeFor[C]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("sdk: EntryConfig: %s must be a struct", t))
	}
	schema := configSchema(t)
	fields := configFields(t, nil)
	return func(d *protocol.ExtensionType, e *entryType) {
		d.Fields = fields
		e.check = func(config jsontext.Value) error {
			var c C
			return decodeConfig(schema, config, &c)
		}
	}
}

// DecodeEntry decodes an entry's config into C as strictly as validate
// checks it (EntryConfig), so Configure or a task reads a typed config in
// one call. A config that does not fit is ErrInvalid naming the entry and
// the field.
func DecodeEntry[C any](e Entry) (C, error) {
	var c C
	if err := decodeConfig(configSchema(reflect.TypeFor[C]()), e.Config, &c); err != nil {
		return c, entryError(e.Type, e.Name, err)
	}
	return c, nil
}

// schemas caches each config type's schema: DecodeEntry runs per entry
// and per generation, and a schema is derived by reflection.
var schemas sync.Map // reflect.Type → *Schema

func configSchema(t reflect.Type) *Schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*Schema)
	}
	s, _ := schemas.LoadOrStore(t, schemaOf(t, map[reflect.Type]bool{}))
	return s.(*Schema)
}

// decodeConfig checks config against schema, then decodes it strictly into
// v. Its errors name the field and never quote a value: a config may hold
// one an operator would not want in a log.
func decodeConfig(schema *Schema, config jsontext.Value, v any) error {
	if len(config) == 0 {
		config = jsontext.Value("{}")
	}
	var generic any
	if err := json.Unmarshal(config, &generic); err != nil {
		return errors.New("is not valid JSON")
	}
	if err := schema.Check(generic); err != nil {
		return err
	}
	if err := json.Unmarshal(config, v, strictInput); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) && se.JSONPointer != "" {
			return fmt.Errorf("field %s does not fit its type", se.JSONPointer)
		}
		return errors.New("does not fit its type")
	}
	return nil
}

// entryError says which entry's config is refused and why.
func entryError(typ, name string, err error) error {
	if name == "" {
		return protocol.Errorf(protocol.ErrInvalid, "a %s entry's config: %v", typ, err)
	}
	return protocol.Errorf(protocol.ErrInvalid, "%s entry %q: config %v", typ, name, err)
}

// configFields describes C's fields for the operator, in declaration order,
// flattening embedded structs as JSON does.
func configFields(t reflect.Type, out []protocol.Field) []protocol.Field {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, optional, use := jsonField(f)
		switch {
		case !use:
		case name == "":
			out = configFields(f.Type, out)
		default:
			out = append(out, protocol.Field{Name: name, Help: f.Tag.Get("doc"), Required: !optional})
		}
	}
	return out
}
