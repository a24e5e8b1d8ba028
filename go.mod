module github.com/toolguard/toolguard

go 1.25.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/google/jsonschema-go v0.4.3
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/tmc/langchaingo v0.1.14
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkoukk/tiktoken-go v0.1.6 // indirect
)
