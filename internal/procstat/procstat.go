// Package procstat is a kit for the engine's self-checks and the target's
// figures: it samples from /proc a Linux process's CPU time (whole process
// and each thread) and resident set size, and the whole machine's CPU
// time (/proc/stat), to tell how busy a target process and the machine
// were over a phase.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ).
// Linux exposes 100 Hz to user space on every architecture Go supports.
const clockTick = 10 * time.Millisecond

// Sample is a process's counters at one instant.
type Sample struct {
	// At is when it was taken.
	At time.Time
	// CPU is the process's user+system time so far (all threads, live
	// and exited).
	CPU time.Duration
	// Threads is each live thread's user+system time so far, by thread id.
	Threads map[int]time.Duration
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
}

// Take samples process pid. It fails when the process is gone or /proc
// is not readable.
func Take(pid int) (Sample, error) {
	s := Sample{At: time.Now(), Threads: map[int]time.Duration{}}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	cpu, err := statCPU(filepath.Join(dir, "stat"))
	if err != nil {
		return Sample{}, err
	}
	s.CPU = cpu
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	if err != nil {
		return Sample{}, fmt.Errorf("procstat: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		c, err := statCPU(filepath.Join(dir, "task", t.Name(), "stat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		s.Threads[tid] = c
	}
	rss, err := vmRSS(filepath.Join(dir, "status"))
	if err != nil {
		return Sample{}, err
	}
	s.RSS = rss
	return s, nil
}

// statCPU reads utime+stime (fields 14 and 15) of a stat file. The second
// field, the command name, may hold spaces and parentheses: fields are
// counted after its last ')'.
func statCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("procstat: %s: malformed", path)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: %s: malformed", path)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: %s: malformed utime/stime", path)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// vmRSS reads VmRSS (in kB) from a status file; a process without one (a
// zombie) has 0.
func vmRSS(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: %s: malformed VmRSS", path)
		}
		return kb * 1024, nil
	}
	return 0, nil
}

// Usage is a process's resource use between two samples.
type Usage struct {
	// CPU is the process's CPU time over the wall time between the
	// samples, as a fraction of the machine (1.0: every core busy).
	CPU float64
	// CPUMaxThread is the busiest thread's CPU time over the wall time, as
	// a fraction of one core (1.0: one core fully busy).
	CPUMaxThread float64
	// RSS is the resident set size at the end, in bytes.
	RSS int64
	// Wall is the time between the samples.
	Wall time.Duration
}

// Between computes the use from a to b on a machine of cores cores
// (OnlineCores when cores <= 0: the machine's, not the affinity mask's). A thread that started after a counts
// all its time; threads that ended before b are only in the total. The
// counters move in 10 ms ticks, so over a short interval the fractions
// are coarse.
func Between(a, b Sample, cores int) Usage {
	if cores <= 0 {
		cores = OnlineCores()
	}
	u := Usage{RSS: b.RSS, Wall: b.At.Sub(a.At)}
	if u.Wall <= 0 {
		return u
	}
	u.CPU = float64(b.CPU-a.CPU) / float64(u.Wall) / float64(cores)
	var most time.Duration
	for tid, c := range b.Threads {
		most = max(most, c-a.Threads[tid])
	}
	u.CPUMaxThread = float64(most) / float64(u.Wall)
	return u
}
