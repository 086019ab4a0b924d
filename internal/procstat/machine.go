package procstat

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Machine is the whole machine's CPU time so far, summed over its cores,
// from the first line of /proc/stat.
type Machine struct {
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
	return m, nil
}

// MachineUsage is the machine's CPU use between two samples, in cores
// (2.0: two cores busy all the time).
type MachineUsage struct {
	Busy  float64 `json:"busy"`
	Steal float64 `json:"steal"`
}

// MachineBetween is the use between a and b over cores cores: the busy
// fraction of the CPU time that passed, times cores. Zero when no time
// passed between them.
func MachineBetween(a, b Machine, cores int) MachineUsage {
	total := b.Total - a.Total
	if total <= 0 {
		return MachineUsage{}
	}
	c := float64(cores)
	return MachineUsage{
		Busy:  c * float64(b.Busy-a.Busy) / float64(total),
		Steal: c * float64(b.Steal-a.Steal) / float64(total),
	}
}
