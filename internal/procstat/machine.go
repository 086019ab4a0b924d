package procstat

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine is the whole machine's CPU time so far, summed over its cores,
// from the first line of /proc/stat, and the number of those cores.
type Machine struct {
	// Cores is the number of online cores the times are summed over (the
	// cpuN lines of /proc/stat): every core of the machine, whatever the
	// CPU affinity of the process that reads it.
	Cores int
	// Busy is user+nice+system+irq+softirq+steal time (guest time is
	// inside user).
	Busy time.Duration
	// Total is Busy plus idle and iowait.
	Total time.Duration
	// Steal is time the hypervisor gave this machine's cores to others.
	Steal time.Duration
}

// TakeMachine reads /proc/stat. It fails where there is none.
func TakeMachine() (Machine, error) {
	return machineFrom("/proc/stat")
}

func machineFrom(path string) (Machine, error) {
	f, err := os.Open(path)
	if err != nil {
		return Machine{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return Machine{}, errors.New("procstat: /proc/stat is empty")
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 8 || fields[0] != "cpu" {
		return Machine{}, fmt.Errorf("procstat: unexpected first line of %s: %q", path, sc.Text())
	}
	var v [10]time.Duration
	for i := 1; i < len(fields) && i <= 10; i++ {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return Machine{}, fmt.Errorf("procstat: %s field %d: %w", path, i, err)
		}
		v[i-1] = time.Duration(n) * clockTick
	}
	// user nice system idle iowait irq softirq steal guest guest_nice
	m := Machine{Steal: v[7]}
	m.Busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	m.Total = m.Busy + v[3] + v[4]
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "cpu"); ok && n != "" && n[0] >= '0' && n[0] <= '9' {
			m.Cores++
		}
	}
	if err := sc.Err(); err != nil {
		return Machine{}, fmt.Errorf("procstat: %s: %w", path, err)
	}
	if m.Cores == 0 {
		return Machine{}, fmt.Errorf("procstat: %s lists no cores (cpuN lines)", path)
	}
	return m, nil
}

// OnlineCores is the number of the machine's online cores, from
// /proc/stat (Machine.Cores); runtime.NumCPU where /proc/stat cannot be
// read. Unlike runtime.NumCPU on Linux it does not shrink under a CPU
// affinity mask (taskset): machine-wide CPU fractions are over it.
func OnlineCores() int {
	if m, err := TakeMachine(); err == nil {
		return m.Cores
	}
	return runtime.NumCPU()
}

// MachineUsage is the machine's CPU use between two samples, in cores
// (2.0: two cores busy all the time), and how many cores it has.
type MachineUsage struct {
	Busy  float64 `json:"busy"`
	Steal float64 `json:"steal"`
	// Cores is the machine's online cores (Machine.Cores of the later
	// sample); 0 in results saved before it was recorded.
	Cores int `json:"cores,omitempty"`
}

// MachineBetween is the use between a and b over the machine's cores
// (b.Cores): the busy fraction of the CPU time that passed, times the
// cores. Zero when no time passed between them.
func MachineBetween(a, b Machine) MachineUsage {
	total := b.Total - a.Total
	if total <= 0 {
		return MachineUsage{Cores: b.Cores}
	}
	c := float64(b.Cores)
	return MachineUsage{
		Busy:  c * float64(b.Busy-a.Busy) / float64(total),
		Steal: c * float64(b.Steal-a.Steal) / float64(total),
		Cores: b.Cores,
	}
}
