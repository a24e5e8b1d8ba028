module github.com/toolguard/toolguard/examples/openai-approval

go 1.26.0

replace github.com/toolguard/toolguard => ../..

require (
	github.com/openai/openai-go/v3 v3.98.0
	github.com/toolguard/toolguard v0.0.0-00010101000000-000000000000
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)
