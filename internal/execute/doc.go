// Package execute runs a scenario: it is the stage between the command
// line and the pipeline's packages. Compile loads and validates a
// scenario file (schema), builds its driver once to check its
// configuration (NewDriver, the one place a driver key maps to a driver
// package) and compiles the plan (engine). Run starts and stops a spawned
// reference target (targets), builds the driver, wires the counter
// fetches and the process meters, runs the plan (engine), and then judges
// it (Judge) and decides its outcome (Decide), returning the report as a
// value (reports.Run). Judge reads only what the report records, so a
// saved or merged result can be judged again.
//
// It writes no file and reads no flag: cmd/runner keeps the flags,
// signals, terminal, output files and the process's exit code; Options
// carry what a caller (or a test) passes in.
package execute
