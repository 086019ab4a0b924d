//go:build linux

package procstat

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A thread that spins until it has used 300 ms of CPU (its own thread
// CPU clock, so a loaded machine that preempts it only stretches the
// wall time) shows as the busiest thread with those 300 ms, at most one
// core, and the process's own total includes it.
func TestBusyThreadOfOwnProcess(t *testing.T) {
	pid := os.Getpid()
	a, err := Take(pid)
	if err != nil {
		t.Fatal(err)
	}
	if a.RSS <= 0 || a.CPU < 0 || len(a.Threads) == 0 {
		t.Fatalf("first sample %+v: want RSS > 0 and threads", a)
	}
	if _, ok := a.Threads[pid]; !ok {
		t.Errorf("the main thread %d is not among the threads %v", pid, a.Threads)
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(done)
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
			return
		}
		end := ts.Nano() + (300 * time.Millisecond).Nanoseconds()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil || ts.Nano() >= end {
				return
			}
		}
	}()
	<-done
	b, err := Take(pid)
	if err != nil {
		t.Fatal(err)
	}
	u := Between(a, b, 0)
	// 300 ms of one thread's CPU: its share of a core times the wall
	// time; /proc counts in 10 ms ticks, hence the margin.
	if busy := u.CPUMaxThread * u.Wall.Seconds(); busy < 0.27 || u.CPUMaxThread > 1.1 {
		t.Errorf("busiest thread %.2f of a core over %s = %.3f s of CPU, want ≈ 0.3 s and at most one core", u.CPUMaxThread, u.Wall, busy)
	}
	total := u.CPU * float64(runtime.NumCPU())
	if total < u.CPUMaxThread-0.05 {
		t.Errorf("process %.2f cores is below its busiest thread %.2f", total, u.CPUMaxThread)
	}
	if u.RSS != b.RSS || u.Wall < 300*time.Millisecond {
		t.Errorf("usage %+v", u)
	}
}

// An idle interval is idle: no thread near a core.
func TestIdleOwnProcess(t *testing.T) {
	a, err := Take(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	b, err := Take(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u := Between(a, b, 2); u.CPUMaxThread > 0.5 {
		t.Errorf("idle process: busiest thread %.2f of a core", u.CPUMaxThread)
	}
}

// The command name may hold spaces and parentheses; fields count after
// its last ')'.
func TestStatCommandWithParens(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stat")
	line := "1234 (a) b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 100 1000 200\n"
	if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := statCPU(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := 325 * clockTick; got != want {
		t.Fatalf("utime+stime %s, want %s", got, want)
	}
}

func TestGoneProcess(t *testing.T) {
	if _, err := Take(1 << 30); err == nil {
		t.Fatal("a pid that cannot exist sampled without error")
	}
}

func TestBetweenArithmetic(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Sample{At: t0, CPU: time.Second, Threads: map[int]time.Duration{1: 500 * time.Millisecond, 2: 0}, RSS: 1}
	b := Sample{At: t0.Add(2 * time.Second), CPU: 3 * time.Second,
		Threads: map[int]time.Duration{1: 2300 * time.Millisecond, 2: 200 * time.Millisecond, 3: 100 * time.Millisecond}, RSS: 4096}
	u := Between(a, b, 4)
	if u.CPU != 0.25 { // 2 s of CPU over 2 s on 4 cores
		t.Errorf("CPU %v, want 0.25", u.CPU)
	}
	if u.CPUMaxThread != 0.9 { // thread 1: 1.8 s over 2 s
		t.Errorf("CPUMaxThread %v, want 0.9", u.CPUMaxThread)
	}
	if u.RSS != 4096 {
		t.Errorf("RSS %d", u.RSS)
	}
}

func TestMachine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "stat")
	// user nice system idle iowait irq softirq steal guest guest_nice
	os.WriteFile(p, []byte("cpu  100 0 50 800 10 5 5 30 0 0\ncpu0 1 2 3 4\ncpu1 1 2 3 4\nintr 1 2\ncpuxyz\n"), 0o644)
	a, err := machineFrom(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Busy != 190*clockTick || a.Total != 1000*clockTick || a.Steal != 30*clockTick || a.Cores != 2 {
		t.Fatalf("%+v", a)
	}
	os.WriteFile(p, []byte("cpu  250 0 100 850 10 5 5 80 0 0\ncpu0 1 2 3 4\ncpu1 1 2 3 4\n"), 0o644)
	b, _ := machineFrom(p)
	// 250 busy (150 user, 50 system, 50 steal) of 300 ticks on 2 cores.
	u := MachineBetween(a, b)
	if math.Abs(u.Busy-2*250.0/300) > 1e-9 || math.Abs(u.Steal-2*50.0/300) > 1e-9 || u.Cores != 2 {
		t.Errorf("%+v", u)
	}
	for _, bad := range []string{"intr 1 2\n", "cpu  250 0 100 850 10 5 5 80 0 0\n"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if m, err := machineFrom(p); err == nil {
			t.Errorf("%q was read: %+v (no cpu line, or no cpuN lines)", bad, m)
		}
	}
	if _, err := TakeMachine(); err != nil && runtime.GOOS == "linux" {
		t.Errorf("this machine: %v", err)
	}
}

// OnlineCores counts the machine's cores, not the affinity mask's: on
// Linux it is /proc/stat's cpuN lines, at least runtime.NumCPU.
func TestOnlineCores(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	want := len(regexp.MustCompile(`(?m)^cpu[0-9]+ `).FindAll(b, -1))
	if got := OnlineCores(); got != want || got < runtime.NumCPU() {
		t.Errorf("OnlineCores %d; /proc/stat lists %d, runtime.NumCPU %d", got, want, runtime.NumCPU())
	}
}
