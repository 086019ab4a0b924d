// Package targets holds the reference targets, servers outside the
// pipeline with known behaviour that scenarios load (`runner serve KIND`),
// and starts them as separate child processes:
// the load generator and the target never share a process, a heap or a
// scheduler. The servers themselves live in subpackages (httptarget,
// wsgateway, frametarget), which share from here their flag parsing
// (ParseFlags, FlagUsage, ListenFlag) and their start and stop (Listen,
// ServeUntil, ShutdownHTTP).
package targets
