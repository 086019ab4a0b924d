package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/reports"
)

// underNofile returns a command that runs `runner args...` (this test
// binary as main) with RLIMIT_NOFILE set to soft:hard: with prlimit(1)
// where there is one, else through the shell's ulimit.
func underNofile(t *testing.T, soft, hard int, args ...string) *exec.Cmd {
	t.Helper()
	if pl, err := exec.LookPath("prlimit"); err == nil {
		return exec.Command(pl, append([]string{fmt.Sprintf("--nofile=%d:%d", soft, hard), "--", os.Args[0]}, args...)...)
	}
	sh := fmt.Sprintf(`ulimit -S -n %d && ulimit -H -n %d && exec "$0" "$@"`, soft, hard)
	return exec.Command("sh", append([]string{"-c", sh, os.Args[0]}, args...)...)
}

// B23, the defect pinned: the client's own descriptor or port limits
// reported as the target's errors.
//
// (a): under `ulimit -n 256` (soft and hard), a plan of 500
// connections cannot fit. The runner exits 3 before any traffic (the
// target sees no request and no connection) and says what it needs (500
// connections plus a reserve), the limit (256) and how to raise it; it
// never runs with ~250 connections and calls the rest errors.
func TestField_B23_DescriptorLimit(t *testing.T) {
	base := target(t)
	file := scenario(t, "fds.yaml", fmt.Sprintf(`version: 1
name: fds
target: {url: %q}
driver: {http: {path: /x, timeout: 2s}}
phases:
  - {name: steady, closed: {connections: 500}, duration: 5s}
`, base))
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	p := startCmd(t, underNofile(t, 256, 256, "run", "--json", jsonPath, file))
	code := p.wait(t, 30*time.Second)
	stdout, stderr := p.stdout.String(), p.stderr.String()
	if code != exitCouldNotRun {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("stderr: %s", stderr)
	m := regexp.MustCompile(`needs (\d+) file descriptors`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("message does not say how many descriptors the plan needs:\n%s", stderr)
	}
	if need, _ := strconv.Atoi(m[1]); need < 500 || need > 600 {
		t.Errorf("needs %d descriptors, want 500 connections plus a small reserve", need)
	}
	for _, want := range []string{"500 connections", "limit is 256", "ulimit -n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("message lacks %q:\n%s", want, stderr)
		}
	}
	st := stats(t, base)
	if st["requests"] != 0 || st["connections"] != 0 {
		t.Errorf("traffic reached the target: %v", st)
	}
	rep := readJSON(t, jsonPath)
	if rep["outcome"] != "could-not-run" || !strings.Contains(fmt.Sprint(rep["error"]), "ulimit -n") {
		t.Errorf("report outcome %v error %v, want could-not-run with the remedy", rep["outcome"], rep["error"])
	}
}

// B23 (the client's descriptor limit booked as target errors), (a), the
// allowed way out: with the soft limit at 256 but the hard
// one high enough, the runner raises its soft limit and runs every
// connection.
func TestField_B23_SoftLimitRaised(t *testing.T) {
	base := target(t)
	file := scenario(t, "fds.yaml", fmt.Sprintf(`version: 1
name: fds-raised
target: {url: %q}
driver: {http: {path: /x, timeout: 5s}}
phases:
  - {name: steady, closed: {connections: 500}, requests: 500}
`, base))
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	p := startCmd(t, underNofile(t, 256, 4096, "run", "--json", jsonPath, file))
	code := p.wait(t, 60*time.Second)
	if code != exitPass {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, &p.stdout, &p.stderr)
	}
	rep := readJSON(t, jsonPath)
	ph := rep["result"].(map[string]any)["phases"].([]any)[0]
	if got := jsonNum(t, ph, "connections_established"); got != 500 {
		t.Errorf("%v connections established, want 500", got)
	}
	if got := jsonNum(t, ph, "summary", "errors"); got != 0 {
		t.Errorf("%v errors, want 0", got)
	}
}

// B23 (the client's port limit booked as target errors), (b), unit level:
// connect errors with EADDRNOTAVAIL (the client's
// ephemeral ports exhausted) are classed connect/EADDRNOTAVAIL, booked as
// errors of that class (never timeouts or target statuses), and the
// self-checks and the console name the client as the likely cause.
func TestField_B23_AddrNotAvailIsClientSide(t *testing.T) {
	file := scenario(t, "ports.yaml", `version: 1
name: ports
target: {url: "http://127.0.0.1:1"}
driver: {http: {path: /x, keep_alive: false, timeout: 2s}}
phases:
  - {name: steady, open: {rate: 3000/s, connections: 16}, duration: 2s}
`)
	sc, pl, err := execute.Compile(file)
	if err != nil {
		t.Fatal(err)
	}
	// What net.Dialer returns when no local port is free.
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)}
	class, code := drivers.Classify(dialErr)
	if class != drivers.Connect || code != drivers.CodeAddrNotAvail || !drivers.ClientSide(code) {
		t.Fatalf("EADDRNOTAVAIL classed %s/%s (client-side %v), want connect/EADDRNOTAVAIL, client-side", class, code, drivers.ClientSide(code))
	}

	// 1000 requests succeed, then the ports run out for the other 5000.
	rec := measure.NewRecorder(1, measure.Options{Duration: 2 * time.Second})
	for i := range 6000 {
		at := time.Duration(i) * time.Second / 3000
		out := drivers.Outcome{Class: drivers.OK, Responded: true, Dialed: 1}
		if i >= 1000 {
			out = drivers.Outcome{Class: class, Code: code, Err: dialErr}
		}
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Seq: uint64(i + 1), Intended: at, Sent: at, Done: at + 200*time.Microsecond, Outcome: out})
	}
	rec.AddConnectionsOpened(16)
	s := rec.Summary(2 * time.Second)
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.Errors != 5000 || s.ErrorsByClass["connect"] != 5000 || s.ErrorsByCode["EADDRNOTAVAIL"] != 5000 || s.Timeouts != 0 {
		t.Fatalf("errors %d by class %v by code %v timeouts %d", s.Errors, s.ErrorsByClass, s.ErrorsByCode, s.Timeouts)
	}
	if s.Arrivals != s.Requests+s.Dropped {
		t.Fatalf("arrivals %d != requests %d + dropped %d", s.Arrivals, s.Requests, s.Dropped)
	}
	pr := &engine.PhaseResult{Repeat: 1, Phase: &pl.Phases[0], Summary: s, ConnectionsRequested: 16, ConnectionsEstablished: 16}
	pr.Metrics = engine.MetricsOf(pr)
	res := &engine.Result{Phases: []*engine.PhaseResult{pr}}
	ws := engine.Checks(pl, res)
	var found *engine.Warning
	for i, w := range ws {
		if w.Code == "client-side-errors" {
			found = &ws[i]
		}
	}
	if found == nil {
		t.Fatalf("no client-side-errors warning among %+v", ws)
	}
	for _, want := range []string{"5000 EADDRNOTAVAIL", "client's, not the target's", "local address exhausted", "keep-alive", "ip_local_port_range"} {
		if !strings.Contains(found.Message, want) {
			t.Errorf("warning %q lacks %q", found.Message, want)
		}
	}

	var out bytes.Buffer
	rep := &reports.Run{RunID: "t", Tool: "runner", Scenario: sc, Plan: pl, Result: res, Verdict: engine.Judge(pl, res), Warnings: ws}
	reports.Console(&out, rep, true)
	for _, want := range []string{"connect=5000", "EADDRNOTAVAIL=5000", "local address exhausted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, &out)
		}
	}
}

// B23 (the client's port limit booked as target errors), (b) for real,
// scaled down: in a private network namespace whose
// local port range has 64 ports and no TIME_WAIT reuse, HTTP without
// keep-alive at 1000/s for 2 s runs out of local ports (every connection
// the client closes first sits in TIME_WAIT for a minute). The failures
// are connect errors with code EADDRNOTAVAIL, never timeouts or target
// errors; nothing is lost (arrivals == requests + dropped); the run
// neither crashes nor hangs; the warnings name the likely cause. Needs
// root and unshare(1); skipped otherwise.
func TestField_B23_EphemeralPortsNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	tools := map[string]string{}
	for _, name := range []string{"unshare", "ip", "sysctl"} {
		p, err := exec.LookPath(name)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
				if _, err2 := os.Stat(filepath.Join(dir, name)); err2 == nil {
					p, err = filepath.Join(dir, name), nil
					break
				}
			}
		}
		if err != nil {
			t.Skipf("no %s", name)
		}
		tools[name] = p
	}
	if out, err := exec.Command(tools["unshare"], "--net", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace here: %v %s", err, out)
	}
	file := scenario(t, "ports.yaml", `version: 1
name: ports
target: {serve: http}
driver: {http: {path: /x, keep_alive: false, timeout: 2s}}
phases:
  - {name: steady, open: {rate: 1000/s, connections: 16}, duration: 2s}
`)
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	sh := fmt.Sprintf(`%s link set lo up && %s -q -w net.ipv4.ip_local_port_range="60000 60063" && %s -q -w net.ipv4.tcp_tw_reuse=0 && exec "$0" "$@"`,
		tools["ip"], tools["sysctl"], tools["sysctl"])
	p := startCmd(t, exec.Command(tools["unshare"], "--net", "sh", "-c", sh, os.Args[0], "run", "--json", jsonPath, file))
	code := p.wait(t, 60*time.Second)
	stdout, stderr := p.stdout.String(), p.stderr.String()
	rep := readJSON(t, jsonPath)
	ph := rep["result"].(map[string]any)["phases"].([]any)[0]
	s := ph.(map[string]any)["summary"].(map[string]any)
	arr, req, dropped := jsonNum(t, s, "arrivals"), jsonNum(t, s, "requests"), jsonNum(t, s, "dropped")
	errs, unsent := jsonNum(t, s, "errors"), jsonNum(t, s, "cancelled_unsent")
	leftUnsent, _ := s["left_over_unsent"].(float64)
	t.Logf("arrivals %v requests %v ok %v errors %v by class %v by code %v", arr, req, s["ok"], errs, s["errors_by_class"], s["errors_by_code"])
	if arr != req+dropped+unsent+leftUnsent {
		t.Errorf("arrivals %v != requests %v + dropped %v + cancelled_unsent %v + left_over_unsent %v", arr, req, dropped, unsent, leftUnsent)
	}
	if errs == 0 {
		t.Skip("the local ports did not run out this time: the target closed first on every connection")
	}
	// Ports running out mid-run is the client's failure: could not run
	// (exit 3), never a pass, even without rules (issue 11).
	if code != exitCouldNotRun || rep["outcome"] != "could-not-run" {
		t.Fatalf("exit %d, outcome %v; want 3, could-not-run\nstdout:\n%s\nstderr:\n%s", code, rep["outcome"], stdout, stderr)
	}
	if !strings.Contains(stdout, "COULD NOT RUN") || !strings.Contains(stdout, "load generator's machine, not the target") {
		t.Errorf("the verdict does not say the client failed:\n%s", stdout)
	}
	if got := jsonNum(t, s, "errors_by_code", "EADDRNOTAVAIL"); got != errs {
		t.Errorf("%v of %v errors are EADDRNOTAVAIL; by code %v", got, errs, s["errors_by_code"])
	}
	if got := jsonNum(t, s, "errors_by_class", "connect"); got != errs {
		t.Errorf("%v of %v errors are of class connect; by class %v", got, errs, s["errors_by_class"])
	}
	if jsonNum(t, s, "timeouts") != 0 {
		t.Errorf("timeouts %v: exhausted local ports are not timeouts", s["timeouts"])
	}
	found := false
	ws, _ := rep["warnings"].([]any)
	for _, w := range ws {
		if w := w.(map[string]any); w["code"] == "client-side-errors" && strings.Contains(fmt.Sprint(w["message"]), "local address exhausted") {
			found = true
		}
	}
	if !found {
		t.Errorf("no client-side warning naming the cause among %v", ws)
	}
	if !strings.Contains(stdout, "EADDRNOTAVAIL errors are the client's, not the target's: local address exhausted") {
		t.Errorf("console does not name the likely cause:\n%s", stdout)
	}
}
