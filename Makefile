# Open Conduit. `make test` is what CI runs (.ci/run).
GO ?= go
BIN := bin/open-conduit
BENCHTIME ?= 2s

.PHONY: build test lint bench

build:
	$(GO) build -o $(BIN) .

lint:
	@files=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt would change:"; echo "$$files"; exit 1; fi
	$(GO) vet ./...

test: lint
	$(GO) test -race -count=1 -timeout 30m ./...

# bench runs every benchmark once, side by side, and rewrites
# docs/benchmarks.md from that run.
bench:
	@mkdir -p bin
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./jsonrpc/ ./session/ | tee bin/bench.txt
	$(GO) run ./bench/report < bin/bench.txt > docs/benchmarks.md
	@echo "wrote docs/benchmarks.md"
