// Package reports is the last stage of the pipeline: it renders a run
// (plan, measured phases, verdict, warnings, environment) for people and
// tools: the console summary, TSV rows (docs/design.md, "Outputs"), the
// JSON report, Markdown (for a pull request or a CI step summary), JUnit
// XML, a self-contained HTML page with charts, and HdrHistogram interval
// logs.
// Every number it prints comes from engine and measure; it computes none.
//
// The JSON report's format has a version (FormatVersion) and a JSON
// Schema, result.schema.json beside this file, which internal/schemagen
// generates from the Go types (`go generate ./reports/`).
package reports

//go:generate go run ../internal/schemagen result -o result.schema.json
