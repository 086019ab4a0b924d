// Package procs keeps the runtime's GOMAXPROCS for the closed model's
// event loops: each loop holds a P while it waits in epoll_wait, so the
// loops run with one P more than there are loops (Spare), and whatever
// describes the process (its environment record, its cores, its
// recorder's shards) reads the GOMAXPROCS the user set (Base), not the
// raised one.
package procs

import (
	"runtime"
	"sync"
)

var (
	mu     sync.Mutex
	before int // GOMAXPROCS before the first Spare raised it
	loops  int // loops running, all callers
)

// Spare makes sure GOMAXPROCS is at least the loops running (n more
// now) plus one, so that the rest of the program always has a P while
// every loop holds one. It returns the undo, which puts GOMAXPROCS back
// once the last loop is over. Safe for concurrent use.
func Spare(n int) (undo func()) {
	mu.Lock()
	defer mu.Unlock()
	if loops == 0 {
		before = runtime.GOMAXPROCS(0)
	}
	loops += n
	if want := loops + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if loops -= n; loops == 0 && runtime.GOMAXPROCS(0) != before {
			runtime.GOMAXPROCS(before)
		}
	}
}

// Base is GOMAXPROCS as the user set it (or the runtime chose): the
// current value, or the one before Spare raised it while loops run.
func Base() int {
	mu.Lock()
	defer mu.Unlock()
	if loops > 0 {
		return before
	}
	return runtime.GOMAXPROCS(0)
}
