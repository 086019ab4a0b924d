// Package schema is the first stage of the pipeline: it turns a scenario
// YAML file into a validated Scenario that the engine compiles into a plan.
//
// Loading is strict. The file is walked as a YAML node tree, not decoded
// blindly, so that every problem of the file is reported at once with its
// position, its key path, what was expected and what was found: unknown or
// misplaced keys (with a nearest-key suggestion), duplicate keys, wrong
// types, values without units, impossible values and rules scoped to
// phases that do not exist or are never judged. Rule expressions themselves
// are compiled later by the engine.
//
// Values carry explicit units: durations `250us|5ms|2s|1m`, rates
// `N/s|N/m`, sizes `B|KiB|MiB|GiB`. Scalar values may use `${NAME}` and
// `${NAME:-default}` to read the environment (`$$` is a literal `$`); the
// values read into string fields are listed in Scenario.Secrets so that
// runner can redact them from everything it writes (internal/redact).
//
// scenario.schema.json, beside this file, is the JSON Schema that editors
// use to complete and check scenario files. internal/schemagen generates
// it from the types here (`go generate ./schema/`), so that the runner
// binary does not link the generator; a test there keeps it in sync.
package schema

//go:generate go run ../internal/schemagen scenario -o scenario.schema.json
