package main

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// findExternal returns the path of an external program a test needs
// (nginx, haproxy), on PATH or in /usr/sbin; without it the test is
// skipped locally and fails under CI, where .ci/run installs the Debian
// package pkg.
func findExternal(t *testing.T, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/" + name); err == nil {
		return "/usr/sbin/" + name
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not found, and CI must run this test (.ci/run installs %s)", name, pkg)
	}
	t.Skipf("%s not found (Debian: apt-get install %s)", name, pkg)
	return ""
}

// startGroup starts cmd in a process group of its own, killed if the test
// process dies. exited is closed when it has exited; stop sends it sig
// (its graceful stop), after 5 s kills its whole group, and returns once
// it has exited.
func startGroup(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) (exited <-chan struct{}, stop func()) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return done, func() {
		cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

// stopAtEnd stops a server the test started (stop, from startGroup) when
// the test ends, and then fails the test if anything still listens on
// addrs (a worker left behind).
func stopAtEnd(t *testing.T, name string, stop func(), addrs ...string) {
	t.Cleanup(func() {
		stop()
		for _, a := range addrs {
			if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still listens on %s after stop", name, a)
			}
		}
	})
}
