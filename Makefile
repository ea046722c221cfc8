# Open Conduit. `make test` is what CI runs (.ci/run).
GO ?= go
BIN := bin/open-conduit
BENCHTIME ?= 2s
STORE_BENCH := ./pebblekv/ ./host/service/ ./host/engine/ ./host/toolbelt/

.PHONY: build test lint bench bench-smoke drills tui-check

# Release binaries are static: with cgo, the net package links libc
# dynamically, which costs every extension start about a millisecond.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) .

lint:
	@files=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt would change:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...

test: lint bench-smoke
	$(GO) test -race -count=1 -timeout 30m ./...

# tui-check runs 'open-conduit tui --embedded' under tmux at 80x24 and
# 160x48, visits every pane, checks each screen and that q leaves nothing
# running, and writes the screens to bin/tui-check/WxH/<pane>.txt. It needs
# tmux (without it, it says so and passes); make test does not run it.
tui-check:
	scripts/tui-check.sh

# drills runs every fault and bad-input drill at full length (the kill -9
# loop 200 times, …) and prints the figures each drill reports; make test
# runs them briefly.
drills:
	$(GO) test -race -count=1 -timeout 60m -v -run 'Drill' ./drills/ -args -drills.full

# bench runs the transport comparison (ours, go.lsp.dev/jsonrpc2 alone,
# go-plugin, the raw pipe) and the engine, toolbelt, store and dashboard
# benchmarks in one run, and rewrites docs/benchmarks.md and
# docs/benchmarks.json from it.
bench:
	@mkdir -p bin
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./jsonrpc/ ./session/ $(STORE_BENCH) ./tui/ | tee bin/gobench.txt
	cd bench/transport && $(GO) run ./cmd/transportbench \
		-json ../../docs/benchmarks.json -md ../../docs/benchmarks.md \
		-gobench ../../bin/gobench.txt -notes ../../docs/benchmarks-notes.md
	@echo "wrote docs/benchmarks.md and docs/benchmarks.json"

# bench-smoke runs every benchmark and the transport harness once, tiny, so
# they cannot rot; it judges no number.
bench-smoke:
	@mkdir -p bin
	$(GO) test -run '^$$' -bench . -benchtime 1x -short ./jsonrpc/ ./session/ $(STORE_BENCH) ./tui/ > bin/bench-smoke.txt
	cd bench/transport && $(GO) vet ./... && $(GO) test -count=1 ./cmd/transportbench/ && \
		$(GO) run ./cmd/transportbench -short -md ../../bin/bench-smoke.md -gobench ../../bin/bench-smoke.txt
