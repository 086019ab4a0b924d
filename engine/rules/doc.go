// Package rules is the verdict stage of the pipeline: it compiles a
// scenario's assertions (expr-lang rules over the metrics of
// docs/design.md, "Metrics") before any traffic, and judges them on each
// repeat's measure.Summary.
//
// # Language
//
// A rule is an expr-lang expression (https://expr-lang.org) that must be
// true or false, over the metrics (see NewEnv for names and units), with
// two extensions expr lacks, implemented by a small front end that
// rewrites the source (skipping string literals and comments) and patches
// expr's syntax tree:
//
//   - Duration literals: a decimal number directly followed by a unit
//     (ns, us, µs, ms, s, m, h), possibly compound: 100ns 250us 20ms 1.5s
//     2m 1h30m. They are time.Duration values, as are the latency metrics
//     (p50 … stddev, service.*, failed.*, corrected.*, duration, client.gc_pause_max),
//     so `p99 < 20ms` compares durations. A duration used with a bare
//     number is a compile error: `p99 < 20` says "p99 is a duration: write
//     the unit, e.g. 20ms". Durations add and subtract with durations,
//     scale by numbers (p99 * 1.5, p99 / 2) and divide into a number
//     (p99 / p50, p99 / 1ms).
//
//   - Approximate equality: `a ≈ b` holds when
//
//     |a − b| ≤ 0.05 · max(|a|, |b|)
//
//     i.e. within 5 % of the larger magnitude: symmetric, and 0 ≈ 0.
//     `approx(a, b, tol)` takes the relative tolerance explicitly
//     (tol ≥ 0; approx(a, b) is a ≈ b). a and b are both numbers or both
//     durations. `≈` binds exactly like `==`: looser than arithmetic and
//     tighter than and/or/&&/||, so `littleL ≈ connections and errors == 0`
//     is `(littleL ≈ connections) and (errors == 0)` and `a + 1 ≈ b * 2` is
//     `(a + 1) ≈ (b * 2)`. Like `==`, it binds looser than unary `not`:
//     write `not (a ≈ b)`.
//
// Any percentile q in (0, 100) reads nearest-rank over the phase's
// samples: p1 … p99 (whole percents), p999 (99.9), and p99.99 or
// p(99.99) for any other (up to six decimal places), in every group and
// view. The front end rewrites p99.99 and p(q) into an identifier
// (percentileIdent), and the patcher a read of a percentile without a
// field of its own into a read of latency.Pcts, filled when judged.
//
// # Flow steps
//
// A phase whose driver runs flows has figures per step besides its own
// (per iteration): step.NAME.METRIC reads METRIC of flow step NAME
// (step.login.p99, step.items.errors, step.login.service.p99, and for a
// name that cannot follow a dot step["log-in"].p99), from the step's
// own summary through the same catalogue readers, with the same units,
// directions and sample guards as the phase's: a step.login.p99 from
// fewer than 1000 samples is INCONCLUSIVE, and the reason names it
// ("step.login.p99: 998 samples, needs ≥ 1000"). median(step.login.p99)
// and worst(step.login.p99) are taken across repeats as for any metric.
// A step has only the metrics of its own requests (metric.Def.Step): the
// response-time statistics and any percentile, service.* and failed.*,
// requests ok errors error_rate timeouts late arrivals cancelled
// left_over throughput completed_rate achieved_rate samples inflight_mean
// littleL; reading any other per step (connections, duration, dropped,
// offered_rate, corrected.*, errors_by, server.*, client.*, target.*) is
// a compile error. Compile accepts any step name, as the steps are the
// plan's; the plan checks them with Rule.CheckSteps ("unknown step
// "logn"; did you mean login?"), and a rule that reads a step of a
// scenario without flows does not compile into a plan.
//
// # Every rule that compiles evaluates
//
// Compile rejects what could not be judged deterministically and
// finitely: sequences (`a; b`, of which expr would judge only b),
// results that are not booleans, functions outside allowedCalls (now,
// fromJSON, repeat, map, …), ranges that are not small constants,
// indexing of lists, map literals, computed regular expressions, and
// division by a literal zero. Arithmetic runs through checkedArith: a
// runtime division by zero, an overflow or a non-finite value is an
// undefinedError, which leaves its atom neither true nor false in the
// three-valued judgement below, so such a rule is INCONCLUSIVE (or
// decided by its other atoms), never passed on a wrapped integer or
// +Inf. FuzzValidRulesNeverError holds Compile to this.
//
// Unknown names are compile errors that list what is known and suggest the
// nearest name. A metric is a plain value, without members or methods:
// p99.Hours() is an error, and p99 / 1h is p99 in hours. Column numbers
// and the tokens quoted in errors are the rule's as written (`≈`, `20ms`),
// never the front end's rewriting of them.
//
// # Repeats
//
// A rule holds only if it holds in every repeat (Judge). `median(x)` and
// `worst(x)` read one metric across all repeats; they are rewritten at the
// syntax-tree level into reads of values Judge computes before evaluating:
//
//   - worst(x) is the max of a lower-is-better metric and the min of a
//     higher-is-better one:
//     lower is better: p50 p90 p95 p99 p999 max min mean stddev, service.*,
//     failed.*, corrected.*, errors, error_rate, errors_by[code], closes_by[code], timeouts, late, unknown_id, duplicate_id,
//     dropped, cancelled, reconnects, connections_opened, inflight_mean,
//     littleL, client.*, target.*;
//     higher is better: requests, ok, samples, throughput, completed_rate,
//     achieved_rate, connections_established;
//     no direction (worst(x) is a compile error): arrivals, offered_rate,
//     duration, connections, fetches, server.*;
//     step.NAME.x: as x.
//   - median(x) is the middle value; with an even number of repeats the
//     worse of the two middle values (the higher for metrics without a
//     direction). It is always a measured value, never an average of
//     percentiles (docs/design.md, "Repeats").
//
// # Inconclusive
//
// A rule whose verdict the measurement cannot support is INCONCLUSIVE,
// never passed:
//
//   - a percentile pN read from fewer than n ≥ 10 / (1 − N/100) samples,
//     i.e. fewer than ten samples expected above it: p50 needs 20, p75 40,
//     p90 100, p95 200, p99 1000, p99.9 10000, p99.99 100000 (docs/design.md,
//     "Percentiles");
//   - a condition whose value is undefined (a division by zero at run
//     time, an overflow), unless the rest of the rule decides it;
//   - any latency statistic of an empty distribution ("n/a (0 samples)");
//   - error_rate without requests, littleL without responses, rates of a
//     phase of no duration, offered_rate in the closed model;
//   - server.X that was not fetched, client.* and target.* not measured,
//     baseline.* without a baseline;
//   - median(x) or worst(x) when x is unavailable in any repeat;
//   - step.NAME.* of a phase that did not run that step.
//
// The metrics a rule reads are found by walking its syntax tree. Rules are
// judged in three-valued logic over and/or/not, so a rule that is false
// whatever the unavailable values are still FAILS (`errors == 0 and
// p999 < 5ms` with errors = 3), one that is true whatever they are passes,
// and only an open question is inconclusive.
package rules
