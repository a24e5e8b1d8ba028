module github.com/toolguard/toolguard/mcpguard/sdktest

go 1.25.5

replace github.com/toolguard/toolguard => ../..

require (
	github.com/mark3labs/mcp-go v1.2.1
	github.com/toolguard/toolguard v0.0.0-00010101000000-000000000000
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/text v0.41.0 // indirect
)
