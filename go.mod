module github.com/open-conduit/open-conduit

go 1.26

require (
	github.com/go-json-experiment/json v0.0.0-20260601182631-00ed12fed2a6 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	go.lsp.dev/jsonrpc2 v1.0.1 // indirect
)
