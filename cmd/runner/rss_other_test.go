//go:build !linux

package main

import "os"

// peakRSS is 0 (not read) off Linux: getrusage's unit differs by system
// (bytes on macOS) and Windows has none.
func peakRSS(ps *os.ProcessState) int64 { return 0 }
