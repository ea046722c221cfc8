package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// stationConfig is a typed entry config.
type stationConfig struct {
	City     string   `json:"city" doc:"The station's city."`
	Interval int      `json:"interval,omitzero" doc:"Seconds between readings."`
	Tags     []string `json:"tags,omitempty"`
}

func contains(v any, s string) bool { return strings.Contains(fmt.Sprint(v), s) }

// stations declares a typed entry type and counts its own Validate's runs,
// refusing the city "nowhere" itself.
func stations(authored *atomic.Int32) *sdk.Extension {
	return sdk.New("wx").
		EntryType("wx-station", sdk.EntryConfig[stationConfig](),
			sdk.Settings(sdk.Setting{Field: "city", Type: "string"})).
		Validate(func(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
			authored.Add(1)
			c, err := sdk.DecodeEntry[stationConfig](sdk.Entry{Type: p.Type, Name: p.Name, Config: p.Config})
			if err != nil {
				return sdk.ValidateResult{}, err
			}
			if c.City == "nowhere" {
				return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid, "city %q has no station: name another", c.City)
			}
			return sdk.ValidateResult{}, nil
		})
}

// TestTypedEntryValidateRefusesNamingTheField: over a real pipe, the SDK
// refuses a typed entry's config that does not fit its Go type, invalid,
// naming the entry and the field and quoting no value, before the
// extension's own Validate runs; a config that fits reaches it.
func TestTypedEntryValidateRefusesNamingTheField(t *testing.T) {
	var authored atomic.Int32
	h := sdktest.New(t, stations(&authored))
	validate := func(config string) error {
		var raw []byte
		if config != "" {
			raw = []byte(config)
		}
		return h.Raw(context.Background(), protocol.MethodValidate, protocol.ValidateParams{
			Kind: protocol.ValidateExtension, Type: "wx-station", Scope: "s1", Name: "leeds", Config: raw,
		}, nil)
	}
	cases := []struct {
		name, config, field string
	}{
		{"unknown field", `{"city":"Leeds","token":"hunter2"}`, "/token"},
		{"wrong type", `{"city":"Leeds","interval":"hunter2"}`, "/interval"},
		{"wrong element type", `{"city":"Leeds","tags":[1]}`, "/tags/0"},
		{"missing required field", `{"interval":5}`, "/city"},
		{"no config at all", ``, "/city"},
		{"not an object", `["hunter2"]`, "/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.config)
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("got %v, want invalid", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.field) || !strings.Contains(msg, `wx-station entry "leeds"`) {
				t.Fatalf("%q does not name the entry and %s", msg, tc.field)
			}
			if strings.Contains(msg, "hunter2") {
				t.Fatalf("%q quotes a config value", msg)
			}
		})
	}
	if n := authored.Load(); n != 0 {
		t.Fatalf("the extension's Validate ran %d times on configs the SDK refuses", n)
	}
	// Negative controls: a config that fits reaches the extension's
	// Validate, whose own refusal crosses as written.
	if err := validate(`{"city":"Leeds","interval":60}`); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	if err := validate(`{"city":"nowhere"}`); !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "has no station") {
		t.Fatalf("the extension's refusal: %v", err)
	}
	if n := authored.Load(); n != 2 {
		t.Fatalf("the extension's Validate ran %d times, want 2", n)
	}
}

// TestEntryConfigDeclaresTheTypesFields: the entry type's fields come from
// the Go type (json name, doc tag as help, required), with its settings,
// and the manifest validates.
func TestEntryConfigDeclaresTheTypesFields(t *testing.T) {
	var authored atomic.Int32
	m := stations(&authored).Manifest
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	et := m.Provides.Extensions[0]
	want := []protocol.Field{
		{Name: "city", Help: "The station's city.", Required: true},
		{Name: "interval", Help: "Seconds between readings."},
		{Name: "tags"},
	}
	if fmt.Sprint(et.Fields) != fmt.Sprint(want) {
		t.Fatalf("fields %+v, want %+v", et.Fields, want)
	}
	if len(et.Settings) != 1 || et.Settings[0].Field != "city" {
		t.Fatalf("settings %+v", et.Settings)
	}
	// Negative control: an untyped entry type declares no fields.
	if m := sdk.New("wx").EntryType("wx-station").Manifest; len(m.Provides.Extensions[0].Fields) != 0 {
		t.Fatalf("an untyped entry type declared fields %+v", m.Provides.Extensions[0].Fields)
	}
}

// TestDecodeEntryIsAsStrictAsValidate: DecodeEntry gives the typed config
// of an entry that fits, and refuses one that does not, naming the field.
func TestDecodeEntryIsAsStrictAsValidate(t *testing.T) {
	cases := []struct {
		name, config, field string
		want                stationConfig
	}{
		{"fits", `{"city":"Leeds","interval":5}`, "", stationConfig{City: "Leeds", Interval: 5}},
		{"unknown field", `{"city":"Leeds","cty":"x"}`, "/cty", stationConfig{}},
		{"wrong type", `{"city":3}`, "/city", stationConfig{}},
		{"missing required", `{}`, "/city", stationConfig{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sdk.DecodeEntry[stationConfig](sdk.Entry{Scope: "s1", Type: "wx-station", Name: "e", Config: []byte(tc.config)})
			if tc.field == "" {
				if err != nil || got.City != tc.want.City || got.Interval != tc.want.Interval {
					t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want invalid naming %s", err, tc.field)
			}
		})
	}
}
