// Package sysinfo is a kit for the reports: it describes the machine and
// build a run happened on, for the JSON report: a number means little
// without the machine behind it.
package sysinfo

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/mod/module"

	"github.com/runner-dev/runner/internal/clock"
	"github.com/runner-dev/runner/internal/procs"
	"github.com/runner-dev/runner/internal/procstat"
)

// Version is the runner's version; a release build sets it with
// -ldflags "-X github.com/runner-dev/runner/internal/sysinfo.Version=v1.2.3"
// (deploy/release/build.sh, .goreleaser.yaml, the Dockerfile). Left at
// "dev", Collect takes the module version that `go install …@v1.2.3`
// records in the binary instead.
var Version = "dev"

// Commit is the VCS revision the runner was built from; a release build
// sets it with
// -ldflags "-X github.com/runner-dev/runner/internal/sysinfo.Commit=SHA".
// Left empty, Collect takes the revision that `go build` in a git
// checkout records (vcs.revision, "+dirty" when vcs.modified), or the one
// in the pseudo-version that `go install …@COMMIT` records.
var Commit = ""

// Env is the environment of a run.
type Env struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	// Cores is the machine's online cores (procstat.OnlineCores), whatever
	// the runner's CPU affinity.
	Cores int `json:"cores"`
	// CoresAllowed is how many of them the runner may run on: its CPU
	// affinity mask (runtime.NumCPU; fewer than Cores under taskset); 0 in
	// results saved before it was recorded.
	CoresAllowed int `json:"cores_allowed,omitempty"`
	// GOMAXPROCS is how many threads run Go code at once (Go's default is
	// CoresAllowed, or fewer under a cgroup CPU limit).
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	Runner     string `json:"runner_version"`
	// RunnerCommit is the VCS revision the binary was built from, when
	// known: Commit as a release build sets it, or what the Go toolchain
	// recorded (see Commit).
	RunnerCommit string `json:"runner_commit,omitempty"`
	// WorkdirCommit is `git rev-parse HEAD` in the working directory (the
	// project under test), with "+dirty" when it has uncommitted changes.
	WorkdirCommit string `json:"workdir_commit,omitempty"`
	// Timer is the sleep resolution of this machine, measured once per
	// run (clock.Measure); nil when not measured.
	Timer *clock.Resolution `json:"timer_resolution,omitempty"`
}

// CoresText describes the machine's cores and the runner's share of them
// for a report: "2 cores", "2 cores (runner limited to 1 by CPU
// affinity)", "2 cores (runner limited to 1 by GOMAXPROCS)"; "" when
// Cores is unknown (0).
func (e Env) CoresText() string {
	if e.Cores <= 0 {
		return ""
	}
	s := fmt.Sprintf("%d cores", e.Cores)
	if e.Cores == 1 {
		s = "1 core"
	}
	switch {
	case e.CoresAllowed > 0 && e.CoresAllowed < e.Cores && (e.GOMAXPROCS <= 0 || e.GOMAXPROCS >= e.CoresAllowed):
		s += fmt.Sprintf(" (runner limited to %d by CPU affinity)", e.CoresAllowed)
	case e.CoresAllowed > 0 && e.CoresAllowed < e.Cores:
		s += fmt.Sprintf(" (runner limited to %d by CPU affinity, GOMAXPROCS %d)", e.CoresAllowed, e.GOMAXPROCS)
	case e.GOMAXPROCS > 0 && e.GOMAXPROCS < e.Cores:
		s += fmt.Sprintf(" (runner limited to %d by GOMAXPROCS)", e.GOMAXPROCS)
	}
	return s
}

// Collect reads the environment. It never fails: unknown fields stay empty.
// ClientCores is how many cores the runner could use, as recorded:
// CoresAllowed (or Cores when that was not recorded), capped by
// GOMAXPROCS when that is recorded and lower; 0 when nothing is recorded.
func (e Env) ClientCores() int {
	n := e.CoresAllowed
	if n <= 0 {
		n = e.Cores
	}
	if e.GOMAXPROCS > 0 && e.GOMAXPROCS < n {
		n = e.GOMAXPROCS
	}
	return max(n, 0)
}

func Collect() Env {
	e := Env{
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		Cores:        procstat.OnlineCores(),
		CoresAllowed: runtime.NumCPU(),
		GOMAXPROCS:   procs.Base(),
		GoVersion:    runtime.Version(),
		Runner:       Version,
	}
	e.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	e.CPUModel = cpuModel()
	bi, _ := debug.ReadBuildInfo()
	e.Runner, e.RunnerCommit = build(Version, Commit, bi)
	e.WorkdirCommit = gitCommit()
	return e
}

// build returns the runner's version and commit: those set at link time
// (version other than "dev", commit other than ""), else what the Go
// toolchain recorded in bi (nil: nothing recorded). The version falls
// back to the main module's version (`go install …@v1.2.3`; not
// "(devel)", which a build in a checkout records); the commit to the
// vcs.revision setting (a build in a git checkout, "+dirty" appended when
// vcs.modified is true), else the revision in a pseudo-version
// (v0.0.0-20261203075500-0123456789ab → 0123456789ab, from
// `go install …@COMMIT`), else "" (a tagged `go install`: the tag names
// the commit).
func build(version, commit string, bi *debug.BuildInfo) (string, string) {
	if bi == nil {
		return version, commit
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	if commit != "" {
		return version, commit
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit != "" && modified {
		commit += "+dirty"
	}
	if commit == "" && module.IsPseudoVersion(bi.Main.Version) {
		commit, _ = module.PseudoVersionRev(bi.Main.Version)
	}
	return version, commit
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func gitCommit() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}
