package procs

import (
	"runtime"
	"testing"
)

// TestSpare: nested Spares raise GOMAXPROCS to the loops running plus
// one, Base keeps saying the value before, and the last undo puts it
// back.
func TestSpare(t *testing.T) {
	start := runtime.GOMAXPROCS(0)
	undoA := Spare(start)
	if got := runtime.GOMAXPROCS(0); got != start+1 {
		t.Fatalf("GOMAXPROCS %d with %d loops, want %d", got, start, start+1)
	}
	undoB := Spare(2)
	if got := runtime.GOMAXPROCS(0); got != start+3 {
		t.Errorf("GOMAXPROCS %d with %d loops, want %d", got, start+2, start+3)
	}
	if b := Base(); b != start {
		t.Errorf("Base %d while loops run, want %d", b, start)
	}
	undoA()
	if got := runtime.GOMAXPROCS(0); got == start {
		t.Errorf("GOMAXPROCS back to %d while 2 loops still run", got)
	}
	undoB()
	if got, b := runtime.GOMAXPROCS(0), Base(); got != start || b != start {
		t.Errorf("after the last undo GOMAXPROCS %d, Base %d; want %d", got, b, start)
	}
}
