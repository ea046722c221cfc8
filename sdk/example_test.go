package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

// ForecastRequest is weather.forecast's input: its JSON Schema becomes the
// operation's declared input, and a call that does not fit is refused
// before the handler runs.
type ForecastRequest struct {
	City string `json:"city" doc:"The city to forecast, by name."`
	Days int    `json:"days,omitempty"`
}

// Forecast is weather.forecast's output.
type Forecast struct {
	Summary string `json:"summary"`
}

// StationConfig is a weather-station entry's config.
type StationConfig struct {
	City string `json:"city" doc:"The station's city."`
}

func forecast(ctx context.Context, r *sdk.Request, in ForecastRequest) (Forecast, error) {
	if in.City == "atlantis" {
		return Forecast{}, sdk.Errorf(sdk.ErrNotFound, "no forecast for %s: name a city on land", in.City)
	}
	return Forecast{Summary: fmt.Sprintf("rain in %s for %d days", in.City, max(in.Days, 1))}, nil
}

// New starts an extension; each registration declares what it serves, so
// the manifest is derived from the code.
func ExampleNew() {
	ext := sdk.New("weather", sdk.Version("0.1.0"), sdk.Summary("forecasts for agents")).
		Operation("weather.forecast", sdk.Handler(forecast),
			sdk.Describe("the forecast for a city"),
			sdk.Guidance("Call `weather.forecast` before planning anything outdoors.")).
		EntryType("weather-station", sdk.EntryConfig[StationConfig]())

	m := ext.Manifest
	fmt.Println(m.Name, m.Version, m.Command)
	op := m.Provides.Operations[0]
	fmt.Println(op.Name, string(op.Input))
	station := m.Provides.Extensions[0]
	for _, f := range station.Fields {
		fmt.Printf("%s: %s (%s, required %v)\n", station.Type, f.Name, f.Help, f.Required)
	}
	// Output:
	// weather 0.1.0 [weather-extension]
	// weather.forecast {"type":"object","properties":{"city":{"type":"string","description":"The city to forecast, by name."},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}
	// weather-station: city (The station's city., required true)
}

// Handler makes an operation handler from a typed function; its Request
// carries who the call is for and the Host. Here the extension runs on
// sdktest's in-memory host over a real pipe, as a unit test would run it.
func ExampleHandler() {
	ext := sdk.New("weather").Operation("weather.forecast", sdk.Handler(forecast))

	t := &exampleTB{}
	defer t.done()
	h := sdktest.New(t, ext)
	ctx := context.Background()

	out, err := sdktest.Call[Forecast](ctx, h, "weather.forecast", ForecastRequest{City: "Leeds", Days: 2})
	fmt.Println(out.Summary, err)

	_, err = sdktest.Call[Forecast](ctx, h, "weather.forecast", ForecastRequest{City: "atlantis"})
	fmt.Println(errors.Is(err, sdk.ErrNotFound), err)

	_, err = sdktest.Call[Forecast](ctx, h, "weather.forecast", map[string]any{"cty": "Leeds"})
	fmt.Println(errors.Is(err, sdk.ErrBadRequest), err)
	// Output:
	// rain in Leeds for 2 days <nil>
	// true no forecast for atlantis: name a city on land
	// true input field /city is required
}

// Host.Update reads a key, lets fn compute its next value, and commits it
// guarded by the version read, retrying on conflict. What fn adds to the
// Batch (here an Event) commits with the write, so the count and its Event
// land together.
func ExampleHost_Update() {
	type visit struct {
		Page string `json:"page"`
	}
	ext := sdk.New("visits").
		Family("visits.counted", sdk.Rederivable()).
		Schema("visits.counted", 1).
		Operation("visits.count", sdk.Handler(func(ctx context.Context, r *sdk.Request, in visit) (int, error) {
			var n int
			_, err := r.Host.Update(ctx, "visits", in.Page, func(old []byte, _ bool, b *sdk.Batch) ([]byte, error) {
				n, _ = strconv.Atoi(string(old))
				n++
				b.Emit(sdk.Emission{
					Scope: r.Authority.Scope, Source: "visits/counter", Type: "visits.counted",
					DeliveryID: fmt.Sprintf("%s/%d", in.Page, n),
					Payload:    sdk.Payload{Schema: "visits.counted.v1", Data: []byte(`{}`)},
				})
				return []byte(strconv.Itoa(n)), nil
			})
			return n, err
		}))

	t := &exampleTB{}
	defer t.done()
	h := sdktest.New(t, ext, sdktest.WithScopes("site"), sdktest.WithAuthority(sdk.Authority{Scope: "site"}))
	for range 2 {
		n, err := sdktest.Call[int](context.Background(), h, "visits.count", visit{Page: "home"})
		fmt.Println(n, err)
	}
	for _, e := range h.Host().Events() {
		fmt.Println(e.Type, e.DeliveryID)
	}
	// Output:
	// 1 <nil>
	// 2 <nil>
	// visits.counted home/1
	// visits.counted home/2
}

// A Batch is a set of KV preconditions, writes and Events that commits as
// one unit: every check holds and everything applies, or nothing does.
func ExampleBatch() {
	ext := sdk.New("claims").Operation("claims.take", sdk.Handler(func(ctx context.Context, r *sdk.Request, in struct {
		Slot string `json:"slot"`
		By   string `json:"by"`
	}) (string, error) {
		b := sdk.NewBatch().
			CheckAbsent("claims", in.Slot).
			Put("claims", in.Slot, []byte(in.By)).
			Put("claims.log", in.Slot+"/"+in.By, []byte("taken"))
		if _, err := r.Host.Commit(ctx, b); errors.Is(err, sdk.ErrConflict) {
			return "already taken", nil
		} else if err != nil {
			return "", err
		}
		return "taken by " + in.By, nil
	}))

	t := &exampleTB{}
	defer t.done()
	h := sdktest.New(t, ext)
	for _, by := range []string{"ada", "bob"} {
		out, err := sdktest.Call[string](context.Background(), h, "claims.take", map[string]string{"slot": "9am", "by": by})
		fmt.Println(out, err)
	}
	fmt.Println(len(h.Host().KV("claims.log")), "log entry")
	// Output:
	// taken by ada <nil>
	// already taken <nil>
	// 1 log entry
}

// Main is the whole main of an extension's binary: sdk.Main(ext). It serves
// the protocol when the daemon runs the binary and answers the package
// commands otherwise. Run is what it runs, returning the exit status
// instead of exiting, as here.
func ExampleMain() {
	ext := sdk.New("weather", sdk.Version("0.1.0")).
		Operation("weather.forecast", sdk.Handler(forecast))

	// func main() { sdk.Main(ext) }
	status := sdk.Run(ext, []string{"version"})
	fmt.Println("exit status", status)
	// Output:
	// weather 0.1.0
	// exit status 0
}
