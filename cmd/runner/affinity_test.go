package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// Under `taskset -c 0` the runner may use one core, however many the
// machine has (Go's runtime.NumCPU and GOMAXPROCS follow the affinity
// mask). The report keeps both counts: cores is the machine's (the cpuN
// lines of /proc/stat), cores_allowed the runner's; the machine's CPU of
// each phase is over the machine's cores, and the console header says
// the runner was limited.
func TestCoresUnderTaskset(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset (util-linux)")
	}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Skip("no /proc/stat")
	}
	machine := len(regexp.MustCompile(`(?m)^cpu[0-9]+ `).FindAll(stat, -1))
	if machine == 0 {
		t.Fatalf("/proc/stat lists no cores:\n%s", stat)
	}
	r := fcExecUnder(t, t.TempDir(), "affinity", `version: 1
name: affinity
target: {serve: http}
driver: {http: {path: /x}}
phases:
  - {name: steady, open: {rate: 100/s, connections: 2}, duration: 1s}
`, taskset, "-c", "0")
	if r.code != exitPass && r.code != exitInconclusive {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	env := readJSON(t, r.json)["environment"]
	if got := int(jsonNum(t, env, "cores")); got != machine {
		t.Errorf("cores %d, want the machine's %d (/proc/stat)", got, machine)
	}
	if got := int(jsonNum(t, env, "cores_allowed")); got != 1 {
		t.Errorf("cores_allowed %d, want 1 (taskset -c 0)", got)
	}
	if got := int(jsonNum(t, env, "gomaxprocs")); got != 1 {
		t.Errorf("gomaxprocs %d, want 1", got)
	}
	ph := r.phases(t)[0]
	if got := int(jsonNum(t, ph, "machine_cpu", "cores")); got != machine {
		t.Errorf("machine_cpu.cores %d, want %d", got, machine)
	}
	want := "machine  1 core\n"
	if machine > 1 {
		want = fmt.Sprintf("machine  %d cores (runner limited to 1 by CPU affinity)\n", machine)
	}
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the console header lacks %q:\n%s", want, r.stdout)
	}
}
