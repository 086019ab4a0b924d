// Package engine is the middle of the pipeline: it compiles a validated
// scenario into a Plan (Compile), drives a protocol driver through the
// plan's phases on a monotonic clock (Runner.Run), and judges the measured
// phases against the scenario's rules (Judge).
//
// One timekeeper: the engine stamps every request's intended start, send
// and completion; drivers never decide latency. Response time is
// completion − intended start, service time is completion − send.
package engine
