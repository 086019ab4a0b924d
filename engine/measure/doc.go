// Package measure is the recorder and statistics stage of the pipeline: the
// engine hands it one Result per request, it books every request in exactly
// one outcome and in HdrHistograms, and turns a phase into a Summary that
// the rules, the reports and `runner compare` read.
//
// Times are time.Duration offsets on a monotonic clock from the phase
// start. Response time = Done − Intended (what a user feels;
// docs/design.md, "Vocabulary"); service time = Done − Sent. Latency
// distributions without a prefix cover ok outcomes only; failed outcomes
// are kept per error class (docs/design.md, "Metrics").
//
// Percentiles are nearest rank (docs/design.md, "Percentiles"): for n
// samples and 0 < p ≤ 100,
//
//	rank = ⌈p/100 · n⌉,  pN = the rank-th smallest sample,
//
// computed by walking the histogram's buckets, never with HdrHistogram's
// ValueAtQuantile, which rounds the rank.
//
// Over time, a Summary keeps a timeline (counts per second) and the ok
// response times per interval (Summary.Intervals: one HdrHistogram per
// second for phases up to 10 minutes, at most MaxIntervals), both by
// completion time, so that percentiles over time can be derived.
//
// A Summary is self-contained and mergeable (docs/design.md, "Mergeable
// results"): it holds counters, never ratios, and full histograms in
// HdrHistogram's V2 encoded form, so summaries of the same phase from N
// generators can be merged without loss (no command does so yet: the scale-out work will).
package measure
