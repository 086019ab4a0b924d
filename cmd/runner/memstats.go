package main

import "runtime/metrics"

// memFigures is the runner process's own memory as the Go runtime sees
// it, in KiB, for the progress log (bench/soak.sh reads it beside RSS).
type memFigures struct {
	// Heap is the heap's objects: live ones and garbage not yet
	// collected (heap in use, without free spans).
	Heap uint64
	// Live is the live heap as the last GC marked it (0 before the first).
	Live uint64
	// Mapped is all memory the runtime holds from the OS and has not
	// returned: heap spans (used or free), stacks, runtime metadata. RSS
	// below it is memory mapped but never touched (e.g. histogram
	// buckets no sample has reached yet).
	Mapped uint64
	// GCs is the number of completed GC cycles.
	GCs uint64
}

// memSamples are the runtime/metrics names memFigures reads.
var memSamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/gc/cycles/total:gc-cycles",
}

// readMem reads memFigures. It does not stop the world (unlike
// runtime.ReadMemStats), so a progress line every few seconds costs
// nothing a run could measure. A metric the runtime does not know reads 0.
func readMem() memFigures {
	s := make([]metrics.Sample, len(memSamples))
	for i, name := range memSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	v := make([]uint64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return memFigures{Heap: v[0] >> 10, Live: v[1] >> 10, Mapped: (v[2] - min(v[3], v[2])) >> 10, GCs: v[4]}
}
