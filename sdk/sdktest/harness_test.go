package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/open-conduit/open-conduit/protocol"
	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type nameIn struct {
	Name string `json:"name"`
}

// failing has one operation that fails as its input says: an authored
// refusal, an unauthored error, or a panic.
func failing() *sdk.Extension {
	return sdk.New("notes").Operation("notes.greet", sdk.Handler(func(_ context.Context, _ *sdk.Request, in nameIn) (struct{}, error) {
		switch in.Name {
		case "":
			return struct{}{}, sdk.Errorf(sdk.ErrInvalid, "name is empty: say who to greet")
		case "panic":
			panic("kaboom")
		}
		return struct{}{}, fmt.Errorf("counting the greeting: %w", errors.New("boom"))
	}))
}

func TestUnauthoredErrorCarriesWhatTheExtensionLogged(t *testing.T) {
	h := sdktest.New(t, failing())
	cases := []struct {
		name, input string
		code        *protocol.Error
		want        string // in the message; "" for none of the log
	}{
		{"a plain error", "ada", protocol.ErrInternal, "notes.greet: internal error (extension log: counting the greeting: boom)"},
		{"a panic", "panic", protocol.ErrInternal, "notes.greet: internal error (extension log: panic: kaboom)"},
		{"an authored refusal (negative control)", "", protocol.ErrInvalid, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sdktest.Call[struct{}](context.Background(), h, "notes.greet", nameIn{Name: tc.input})
			if !errors.Is(err, tc.code) {
				t.Fatalf("err %v, want code %s", err, tc.code.Code)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("err %q, want %q", err, tc.want)
			}
			if tc.want == "" && strings.Contains(err.Error(), "extension log") {
				t.Errorf("an authored refusal carries the log: %q", err)
			}
		})
	}
	if log := strings.Join(h.Log(), "\n"); !strings.Contains(log, "boom") || !strings.Contains(log, "kaboom") {
		t.Errorf("the harness's log lacks what the extension logged:\n%s", log)
	}
}

// migrating declares KV layout 2 and records each migration it runs.
func migrating() *sdk.Extension {
	return sdk.New("notes", sdk.KVVersion(2)).Migrate(func(ctx context.Context, r *sdk.Request, from, to int) error {
		_, err := r.Host.Commit(ctx, sdk.NewBatch().Put("notes", "migrated", []byte(fmt.Sprintf("%d->%d", from, to))))
		return err
	})
}

func TestWithKVVersionRunsMigrateFromTheStoredLayout(t *testing.T) {
	cases := []struct {
		name string
		opts []sdktest.Option
		want string // "" for no migration
	}{
		{"an older layout", []sdktest.Option{sdktest.WithKVVersion(1)}, "1->2"},
		{"no layout recorded", []sdktest.Option{sdktest.WithKVVersion(0)}, "0->2"},
		{"the declared layout (negative control)", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New(t, migrating(), tc.opts...)
			if got := string(h.KV("notes")["migrated"]); got != tc.want {
				t.Errorf("migration %q, want %q", got, tc.want)
			}
		})
	}
}

// reader answers what its state reads and secret.resolve see, and keeps
// the entries each configure carried.
type seen struct {
	Events  []string `json:"events"`
	Scopes  []string `json:"scopes"`
	Secrets string   `json:"secrets"`
}

func reader(configured *[][]string) *sdk.Extension {
	return sdk.New("notes").EntryType("notes").
		Configure(func(_ context.Context, _ *sdk.Request, p sdk.ConfigureParams) (sdk.ConfigureResult, error) {
			var names []string
			for _, e := range p.Entries {
				names = append(names, e.Scope+"/"+e.Name+"@"+strconv.FormatInt(p.Generation.ID, 10))
			}
			*configured = append(*configured, names)
			return sdk.ConfigureResult{}, nil
		}).
		Validate(func(_ context.Context, _ *sdk.Request, p sdk.ValidateParams) (sdk.ValidateResult, error) {
			if string(p.Config) == `{"bad":true}` {
				return sdk.ValidateResult{}, sdk.Errorf(sdk.ErrInvalid, "bad is not a setting: remove it")
			}
			return sdk.ValidateResult{}, nil
		}).
		Operation("notes.read", sdk.Handler(func(ctx context.Context, r *sdk.Request, _ struct{}) (seen, error) {
			var out seen
			var events protocol.StateEventsResult
			if err := r.Host.Call(ctx, protocol.MethodStateEvents, protocol.StateEventsParams{}, &events); err != nil {
				return out, err
			}
			for _, e := range events.Events {
				out.Events = append(out.Events, e.Scope+"/"+e.DeliveryID)
			}
			var scopes protocol.StateScopesResult
			if err := r.Host.Call(ctx, protocol.MethodStateScopes, struct{}{}, &scopes); err != nil {
				return out, err
			}
			for _, s := range scopes.Scopes {
				out.Scopes = append(out.Scopes, s.ID)
			}
			var secrets protocol.SecretResolveResult
			err := r.Host.Call(ctx, protocol.MethodSecretResolve, protocol.SecretResolveParams{Scope: "s1"}, &secrets)
			out.Secrets = fmt.Sprint(secrets.Secrets, protocol.CodeOf(err))
			return out, nil
		}))
}

func event(delivery string) sdk.Emission {
	return sdk.Emission{Source: "github", DeliveryID: delivery, Type: "github.push", Payload: sdk.Payload{Schema: "github.push.v1", Data: []byte(`{}`)}}
}

func TestSeededEntriesEventsAndSecretsAreWhatTheExtensionSees(t *testing.T) {
	var configured [][]string
	h := sdktest.New(t, reader(&configured),
		sdktest.WithEntries(sdk.Entry{Scope: "s1", Type: "notes", Name: "n1"}),
		sdktest.WithEvents("s1", event("d1")),
		sdktest.WithEvents("s9", event("elsewhere")),
		sdktest.WithSecrets("s1", map[string]string{"token": "t0k"}))
	got, err := sdktest.Call[seen](context.Background(), h, "notes.read", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	want := seen{Events: []string{"s1/d1"}, Scopes: []string{"s1"}, Secrets: "map[token:t0k]"}
	if !slices.Equal(got.Events, want.Events) || !slices.Equal(got.Scopes, want.Scopes) || got.Secrets != want.Secrets {
		t.Errorf("saw %+v, want %+v (the Event in s9, a scope that does not use it, unseen)", got, want)
	}
	if len(h.Events()) != 2 {
		t.Errorf("the host holds %d Events, want both seeded", len(h.Events()))
	}

	// A new generation changes what it sees; a refused one changes nothing.
	if _, err := h.Configure(context.Background(), sdk.ConfigureParams{Entries: []sdk.Entry{{Scope: "s9", Type: "notes", Name: "n9"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Configure(context.Background(), sdk.ConfigureParams{Entries: []sdk.Entry{{Scope: "s2", Type: "notes", Name: "bad", Config: []byte(`{"bad":true}`)}}})
	if !errors.Is(err, sdk.ErrInvalid) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a refused entry's configure: %v, want its refusal", err)
	}
	got, err = sdktest.Call[seen](context.Background(), h, "notes.read", struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Events, []string{"s9/elsewhere"}) || !slices.Equal(got.Scopes, []string{"s9"}) || !strings.Contains(got.Secrets, "unauthorized") {
		t.Errorf("after the new generation saw %+v, want only s9's", got)
	}
	if want := [][]string{{"s1/n1@1"}, {"s9/n9@2"}}; len(configured) != 2 || !slices.Equal(configured[0], want[0]) || !slices.Equal(configured[1], want[1]) {
		t.Errorf("configure carried %v, want %v", configured, want)
	}
}

func TestStartRefusesWhatTheDaemonWouldRefuse(t *testing.T) {
	var configured [][]string
	cases := []struct {
		name string
		opts []sdktest.Option
		want string // in the error; "" to start
	}{
		{"an entry its validate refuses", []sdktest.Option{sdktest.WithEntries(sdk.Entry{Scope: "s1", Type: "notes", Name: "n1", Config: []byte(`{"bad":true}`)})}, "remove it"},
		{"an entry of a type it does not declare", []sdktest.Option{sdktest.WithEntries(sdk.Entry{Scope: "s1", Type: "other", Name: "n1"})}, "does not declare"},
		{"secrets where it has no entry", []sdktest.Option{sdktest.WithSecrets("s1", map[string]string{"t": "v"})}, "no entry in scope"},
		{"an entry it accepts (negative control)", []sdktest.Option{sdktest.WithEntries(sdk.Entry{Scope: "s1", Type: "notes", Name: "n1"})}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := sdktest.Start(reader(&configured), tc.opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				dir := h.StateDir()
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) || h.Close() != nil {
					t.Errorf("after Close the state directory is there (%v), or a second Close fails", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				if h != nil {
					h.Close()
				}
				t.Fatalf("Start: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestStartRefusesAnInvalidManifest: the SDK does not check the manifest
// when it serves (each start would pay for it); the harness does, so an
// author's tests meet a broken rule as the daemon's install would.
func TestStartRefusesAnInvalidManifest(t *testing.T) {
	for _, tc := range []struct {
		name, ext, want string // want in the error; "" to start
	}{
		{"a name that is not an identifier", "Bad Name", "manifest is invalid"},
		{"the same extension named well (negative control)", "good", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := sdktest.Start(sdk.New(tc.ext, sdk.Version("1.0.0")))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if h != nil {
				h.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "name") {
				t.Fatalf("Start: %v, want an error saying %q and naming the field", err, tc.want)
			}
		})
	}
}
