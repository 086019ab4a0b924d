//go:build linux

package slurm_test

// A one-host Slurm cluster for the tests: a private munged (its own key
// and socket), slurmctld and slurmd in the foreground, all as children of
// the test, with their configuration, state and logs in a temporary
// directory, talking over 127.0.0.1 on free ports. Nothing of the
// machine's own Slurm or MUNGE configuration is read or changed.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tools are the programs the cluster needs: Debian's slurm-wlm (slurmctld,
// slurmd and the client commands) and munge.
var tools = []string{"munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "squeue", "scontrol", "scancel"}

// findTools returns the path of each of tools, looking in PATH and then in
// /usr/sbin and /sbin (the daemons are there, often off a user's PATH).
// Without root or without a tool the test is skipped, but under CI (CI set)
// a missing tool fails it: .ci/run installs them.
func findTools(t *testing.T) map[string]string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the Slurm test runs on Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("the Slurm test needs root (it runs slurmd and munged, as a one-host cluster)")
	}
	paths := map[string]string{}
	var missing []string
	for _, name := range tools {
		if p, err := exec.LookPath(name); err == nil {
			paths[name] = p
			continue
		}
		found := false
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				paths[name] = p
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("Slurm not installed (missing %s; Debian: apt-get install slurm-wlm munge)", strings.Join(missing, ", "))
		if os.Getenv("CI") != "" {
			t.Fatal(msg + ", and CI must run this test (.ci/run installs them)")
		}
		t.Skip(msg)
	}
	return paths
}

// cluster is a running one-host Slurm cluster.
type cluster struct {
	dir   string            // its temporary directory: slurm.conf, state, logs
	conf  string            // the slurm.conf path
	node  string            // the node's name (this host's short name)
	tools map[string]string // tool name → path
	logs  []string          // the daemons' log files, for a failure's report
}

// daemon is a process the cluster started, in its own process group.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
}

// startCluster starts munged, slurmctld and slurmd and waits (at most
// 30 s) until the node is idle. Everything is stopped when the test ends,
// pass or fail: the jobs still known to slurmctld are cancelled, the
// daemons are sent SIGTERM and, 5 s later, SIGKILL, and then every process
// left whose environment names this cluster's slurm.conf (a job step, a
// slurmstepd) is killed by its process id.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	paths := findTools(t)
	t0 := time.Now()
	dir := t.TempDir()
	// munged warns when its socket's directory is not searchable by all.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf"), tools: paths}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	c.node, _, _ = strings.Cut(host, ".")

	// Registered first, so run last: the sweep after the daemons stop.
	t.Cleanup(func() { c.sweep(t) })

	// MUNGE: a private key (1 KiB of random bytes, 0400) and daemon.
	key := filepath.Join(dir, "munge.key")
	buf := make([]byte, 1024)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, buf, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge.sock")
	c.start(t, "munged", paths["munged"], "--foreground", "--force",
		"--socket="+sock, "--key-file="+key,
		"--log-file="+filepath.Join(dir, "munged.log"),
		"--pid-file="+filepath.Join(dir, "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munged.seed"))
	waitFor(t, 10*time.Second, "munged's socket", func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})

	for _, sub := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctldPort, slurmdPort := freePort(t), freePort(t)
	for slurmdPort == ctldPort {
		slurmdPort = freePort(t)
	}
	// At least 4 CPUs are declared, whatever the machine has, so that 4
	// tasks of one job fit on one node; config_overrides makes slurmd take
	// the declared figures rather than drain a node that has fewer.
	cpus := max(runtime.NumCPU(), 4)
	conf := fmt.Sprintf(`# A one-host test cluster (deploy/slurm/cluster_test.go).
ClusterName=runnertest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
ReturnToService=2
KillWait=5
SlurmdParameters=config_overrides
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d RealMemory=1024 State=UNKNOWN
PartitionName=debug Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP
`, c.node, ctldPort, slurmdPort, sock, dir, cpus)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	c.start(t, "slurmctld", paths["slurmctld"], "-D", "-i", "-f", c.conf)
	c.start(t, "slurmd", paths["slurmd"], "-D", "-N", c.node, "-f", c.conf)
	// Registered last, so run first: no job outlives the test.
	t.Cleanup(func() { c.cancelAll(t) })

	waitFor(t, 30*time.Second, "the node to be idle in sinfo", func() (bool, string) {
		out, err := c.command(5*time.Second, "sinfo", "-h", "-N", "-o", "%T")
		state := strings.TrimSpace(string(out))
		return err == nil && state == "idle", fmt.Sprintf("%q %v", state, err)
	})
	t.Logf("Slurm: munged, slurmctld and slurmd up, node %s idle, in %v", c.node, time.Since(t0).Round(time.Millisecond))
	return c
}

// start runs a daemon in the foreground as a child in its own process
// group, its output in dir/NAME.out, and stops it when the test ends.
func (c *cluster) start(t *testing.T, name, path string, args ...string) *daemon {
	t.Helper()
	logPath := filepath.Join(c.dir, name+".out")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	c.logs = append(c.logs, logPath)
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(d.done)
	}()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends the daemon SIGTERM and, if it has not ended 5 s later,
// SIGKILL to its process group.
func (d *daemon) stop(t *testing.T) {
	select {
	case <-d.done:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return
	case <-time.After(5 * time.Second):
	}
	t.Logf("%s (pid %d) ignored SIGTERM for 5s: SIGKILL", d.name, d.cmd.Process.Pid)
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		t.Errorf("%s (pid %d) still running after SIGKILL", d.name, d.cmd.Process.Pid)
	}
}

// env is the environment of every command run against the cluster: the
// test's own, less any Slurm variables it may have inherited (the test
// could itself run inside a Slurm job), plus SLURM_CONF.
func (c *cluster) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLURM_") || strings.HasPrefix(k, "SBATCH_") || strings.HasPrefix(k, "SRUN_") || strings.HasPrefix(k, "SALLOC_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SLURM_CONF="+c.conf)
	return append(env, extra...)
}

// command runs a Slurm client tool (by its name in tools) within timeout,
// returning its standard output; its error carries its standard error.
func (c *cluster) command(timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tools[name], args...)
	cmd.Env = c.env()
	cmd.Dir = c.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// job is what `scontrol show job -o` says of a job.
type job struct {
	ID       string
	State    string // JobState: PENDING, RUNNING, COMPLETED, FAILED, ...
	ExitCode int    // the batch script's exit code (ExitCode=C:S)
	Signal   int    // the signal that ended it (S), 0 if none
	Raw      string
}

// finished reports whether the job's state is final.
func (j job) finished() bool {
	switch j.State {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT", "":
		return false
	}
	return true
}

func (c *cluster) job(id string) (job, error) {
	out, err := c.command(5*time.Second, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return job{}, err
	}
	j := job{ID: id, Raw: strings.TrimSpace(string(out))}
	for _, field := range strings.Fields(j.Raw) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "JobState":
			j.State = v
		case "ExitCode":
			code, sig, _ := strings.Cut(v, ":")
			j.ExitCode, _ = strconv.Atoi(code)
			j.Signal, _ = strconv.Atoi(sig)
		}
	}
	return j, nil
}

// waitJob waits until the job has finished, at most until deadline.
func (c *cluster) waitJob(t *testing.T, id string, deadline time.Time) job {
	t.Helper()
	var j job
	var err error
	for {
		j, err = c.job(id)
		if err == nil && j.finished() {
			return j
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("job %s not finished in time: %+v %v", id, j, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cancelAll cancels every job the cluster still runs (cancel).
func (c *cluster) cancelAll(t *testing.T) {
	c.cancel(t, nil)
}

// cancel cancels the jobs ids (nil: every job the cluster still runs) and
// waits (at most 15 s) until none of them is left in the queue. A job's
// processes get SIGTERM, and SIGKILL KillWait (5 s) later.
func (c *cluster) cancel(t *testing.T, ids []string) {
	queued := func() []string {
		out, err := c.command(5*time.Second, "squeue", "-h", "-o", "%i")
		if err != nil {
			t.Log(err)
			return nil
		}
		all := strings.Fields(string(out))
		if ids == nil {
			return all
		}
		return slices.DeleteFunc(all, func(id string) bool { return !slices.Contains(ids, id) })
	}
	left := queued()
	if len(left) == 0 {
		return
	}
	t.Logf("cancelling the jobs left: %v", left)
	if _, err := c.command(5*time.Second, "scancel", left...); err != nil {
		t.Log(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		left = queued()
	}
	if len(left) > 0 {
		t.Logf("jobs still there after scancel: %v (the sweep kills their processes)", left)
	}
}

// sweep kills, by process id, every process still running whose
// environment holds this cluster's SLURM_CONF: every process the cluster
// or its jobs started carries it (the daemons get it from the test, job
// steps through sbatch's --export=ALL, slurmstepd from slurmd), and no
// other process has it.
func (c *cluster) sweep(t *testing.T) {
	mark := []byte("SLURM_CONF=" + c.conf + "\x00")
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(env, mark) {
				continue
			}
			if isZombie(pid) {
				continue
			}
			left = append(left, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(left) == 0 {
			return
		}
		t.Logf("killed processes left by the cluster: %v", left)
		if time.Now().After(deadline) {
			t.Errorf("processes of the cluster still running: %v", left)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// isZombie reports whether process pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// dumpLogs logs the tail of the daemons' output, for a failure's report.
func (c *cluster) dumpLogs(t *testing.T) {
	t.Helper()
	for _, p := range c.logs {
		t.Logf("--- %s (tail)\n%s", filepath.Base(p), tail(p, 30))
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 100 ms until it holds, failing the test after
// timeout with cond's last word on why not.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s: %s", timeout, what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// submit runs submit.sh (beside this file) with args and the extra
// environment, within 30 s, and returns what it printed as KEY=VALUE.
func (c *cluster) submit(t *testing.T, extraEnv []string, args ...string) map[string]string {
	t.Helper()
	script, err := filepath.Abs("submit.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = c.env(append(extraEnv, "PATH="+pathWith(c.tools))...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("submit.sh %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			got[k] = v
		}
	}
	// Before the test's temporary directories go: no job of this test
	// writes into them after it.
	t.Cleanup(func() { c.cancel(t, []string{got["SEGMENT_JOB"], got["MERGE_JOB"]}) })
	for _, k := range []string{"SEGMENT_JOB", "MERGE_JOB", "RESULTS_DIR"} {
		if got[k] == "" {
			t.Fatalf("submit.sh printed no %s:\n%s", k, out)
		}
	}
	return got
}

// pathWith is PATH with the directories of the Slurm tools added (a
// later entry of the same name in the environment wins with exec).
func pathWith(tools map[string]string) string {
	path := os.Getenv("PATH")
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(path) {
		seen[d] = true
	}
	for _, p := range tools {
		if d := filepath.Dir(p); !seen[d] {
			seen[d] = true
			path += string(filepath.ListSeparator) + d
		}
	}
	return path
}
