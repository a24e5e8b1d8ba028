module github.com/toolguard/toolguard/bench

go 1.25.0

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/toolguard/toolguard v0.0.0
)

require golang.org/x/text v0.41.0 // indirect

replace github.com/toolguard/toolguard => ../
