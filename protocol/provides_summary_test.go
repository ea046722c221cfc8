package protocol

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestProvidesSummaryNamesEverySurfaceInManifestOrder(t *testing.T) {
	p := baseManifest().Provides
	p.Extensions = append(p.Extensions, ExtensionType{Type: "acme-job"})
	p.StartGate, p.RunEnvironment, p.Render = true, true, true
	want := []string{
		"connection acme", "ingress acme", "extension acme-job", "family acme.event", "webhooks", "route acme",
		"work_kind acme.task", "recurrence acme.daily", "operation acme.hello", "operation acme.wait", "operation acme.emit",
		"toolset acme.agent", "target job", "dependency_filter", "entry_gated", "start_gate", "executor acme",
		"resource acme-workspace", "sandbox acme-sandbox", "container acme-container", "tunnel acme-tunnel",
		"task acme-sync", "check acme-auth", "external_store acme-store", "schema acme.event", "render", "actions",
		"run_environment", "setup acme", "probe acme.probe", "page acme",
	}
	if got := p.Summary(); !slices.Equal(got, want) {
		t.Errorf("Summary =\n%q\nwant\n%q", got, want)
	}
	if got := (Provides{}).Summary(); len(got) != 0 {
		t.Errorf("an empty Provides summarizes as %q, want nothing", got)
	}
}

// TestProvidesSummaryCoversEveryField sets each field of Provides alone
// and asks for its entry, so a field added later without a summary line
// fails here: a flag must summarize as its manifest name, a list as
// "kind name" with a name taken from the element.
func TestProvidesSummaryCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[Provides]()
	var all Provides
	var want []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		var one Provides
		names := fill(t, f, reflect.ValueOf(&one).Elem().Field(i))
		fill(t, f, reflect.ValueOf(&all).Elem().Field(i))
		got := one.Summary()
		if len(got) != 1 {
			t.Errorf("Provides.%s set alone summarizes as %q, want one entry", f.Name, got)
			continue
		}
		want = append(want, got[0])
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Bool {
			if got[0] != jsonName {
				t.Errorf("flag Provides.%s summarizes as %q, want its manifest name %q", f.Name, got[0], jsonName)
			}
			continue
		}
		kind, name, ok := strings.Cut(got[0], " ")
		if !ok || kind == "" || !slices.Contains(names, name) {
			t.Errorf("Provides.%s summarizes as %q, want \"kind name\" with a name among %q", f.Name, got[0], names)
		}
	}
	if got := all.Summary(); !slices.Equal(got, want) {
		t.Errorf("every field set summarizes as\n%q\nwant each field's entry in field order\n%q", got, want)
	}
}

// fill makes the Provides field f (v) non-zero: a flag true, a list one
// element whose string fields hold distinct values, returned.
func fill(t *testing.T, f reflect.StructField, v reflect.Value) []string {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
		return nil
	case reflect.Slice:
		el := reflect.New(v.Type().Elem()).Elem()
		var names []string
		switch el.Kind() {
		case reflect.String:
			el.SetString(f.Name + "-0")
			names = append(names, el.String())
		case reflect.Struct:
			for j := range el.NumField() {
				if sf := el.Field(j); sf.Kind() == reflect.String {
					sf.SetString(f.Name + "-" + el.Type().Field(j).Name)
					names = append(names, sf.String())
				}
			}
		}
		if len(names) == 0 {
			t.Fatalf("Provides.%s is a list of %s, which this test cannot fill; teach fill its name", f.Name, el.Type())
		}
		v.Set(reflect.Append(v, el))
		return names
	}
	t.Fatalf("Provides.%s is a %s, which this test cannot fill; teach fill and Summary about it", f.Name, v.Type())
	return nil
}
