package engine

import (
	"runtime"
	"time"

	"github.com/runner-dev/runner/internal/procs"
)

// runnerCores is how many cores the runner may use: its CPU affinity
// (runtime.NumCPU, which Go reads from the affinity mask), or GOMAXPROCS
// when lower. The client's saturation (client-cpu, client.cpu) is over
// it; machine-wide figures are over the machine's cores
// (procstat.MachineUsage.Cores). It is read when a phase is measured and
// recorded with it (PhaseResult.ClientCores); judging reads the record.
func runnerCores() int { return min(runtime.NumCPU(), procs.Base()) }

// clientCores is the cores the runner could use while it measured pr, as
// recorded (ClientCores). Judging never reads this process's cores: a
// result judged again elsewhere is judged as it was measured. A result
// that records none (saved before they were recorded; reports.Load fills
// them from the run's recorded environment) counts as one core, the
// least a client had.
func (pr *PhaseResult) clientCores() float64 {
	return float64(max(pr.ClientCores, 1))
}

// usageSample is the process's CPU time and GC count at an instant.
type usageSample struct {
	cpu   time.Duration
	numGC uint32
}

func sample() usageSample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usageSample{cpu: cpuTime(), numGC: ms.NumGC}
}

// since returns the CPU used since the sample as a fraction of one core
// over elapsed, and the longest GC pause among the collections since then
// (the runtime keeps the last 256 pauses).
func (u usageSample) since(elapsed time.Duration) (float64, time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cpu := 0.0
	if elapsed > 0 {
		cpu = float64(cpuTime()-u.cpu) / float64(elapsed)
	}
	var pause time.Duration
	n := ms.NumGC - u.numGC
	for i := uint32(0); i < n && i < uint32(len(ms.PauseNs)); i++ {
		p := time.Duration(ms.PauseNs[(ms.NumGC-1-i)%uint32(len(ms.PauseNs))])
		pause = max(pause, p)
	}
	return cpu, pause
}
