// Package reports is the last stage of the pipeline: it renders a run
// (plan, measured phases, verdict, warnings, environment) for people and
// tools: the console summary, TSV rows (DESIGN.md §7) and the JSON report.
// Every number it prints comes from engine and measure; it computes none.
package reports
