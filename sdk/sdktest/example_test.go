package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/open-conduit/open-conduit/sdk"
	"github.com/open-conduit/open-conduit/sdk/sdktest"
)

type GreetInput struct {
	Name string `json:"name"`
}

type Greeting struct {
	Greeting string `json:"greeting"`
	Count    int    `json:"count"`
}

// greet counts each name's greetings in the extension's KV.
func greet(ctx context.Context, r *sdk.Request, in GreetInput) (Greeting, error) {
	if in.Name == "" {
		return Greeting{}, sdk.Errorf(sdk.ErrInvalid, "name is empty: say who to greet")
	}
	var count int
	_, err := r.Host.Update(ctx, "hello", in.Name, func(old []byte, _ bool, _ *sdk.Batch) ([]byte, error) {
		count, _ = strconv.Atoi(string(old))
		count++
		return []byte(strconv.Itoa(count)), nil
	})
	if err != nil {
		return Greeting{}, fmt.Errorf("counting the greeting: %w", err)
	}
	return Greeting{Greeting: "Hello, " + in.Name + "!", Count: count}, nil
}

// A handler test as an author writes one. In a test function, use
// h := sdktest.New(t, ext, …) instead of Start and Close: it fails the test
// when the start does, stops the extension in the test's cleanup, and puts
// the extension's log in the test's.
func ExampleCall() {
	ext := sdk.New("hello").Operation("hello.greet", sdk.Handler(greet))
	h, err := sdktest.Start(ext, sdktest.WithKV("hello", "ada", []byte("41")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()

	out, err := sdktest.Call[Greeting](ctx, h, "hello.greet", GreetInput{Name: "ada"})
	fmt.Println(out.Greeting, out.Count, err)
	fmt.Println(string(h.KV("hello")["ada"]))

	_, err = sdktest.Call[Greeting](ctx, h, "hello.greet", GreetInput{})
	fmt.Println(errors.Is(err, sdk.ErrInvalid), err)
	// Output:
	// Hello, ada! 42 <nil>
	// 42
	// true name is empty: say who to greet
}
