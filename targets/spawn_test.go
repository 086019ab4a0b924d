//go:build unix

package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a tiny reference target: Spawn
// runs `exe serve KIND --listen 127.0.0.1:0 args...`, and KIND picks the
// behaviour (see helper).
const helperEnv = "TARGETS_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Setenv(helperEnv, "1")
	os.Exit(m.Run())
}

// helper is the child process. argv: serve KIND --listen ADDR [--pidfile F].
//
//	ok          serve /healthz and print the ready line
//	ignore-term as ok, but ignore SIGTERM (Stop must escalate to SIGKILL)
//	exit        print to stdout and stderr, then exit 7 without a ready line
//	silent      never print a ready line; wait to be killed
//	unhealthy   print the ready line, but /healthz answers 503
func helper(argv []string) int {
	if len(argv) < 4 || argv[0] != "serve" {
		fmt.Fprintln(os.Stderr, "helper: bad argv", argv)
		return 2
	}
	kind, listen := argv[1], argv[3]
	for i := 4; i+1 < len(argv); i++ {
		if argv[i] == "--pidfile" {
			os.WriteFile(argv[i+1], []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
	}
	switch kind {
	case "exit":
		fmt.Println("helper: cannot start: bad knob")
		fmt.Fprintln(os.Stderr, "helper: giving up")
		return 7
	case "silent":
		time.Sleep(time.Minute)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	status := http.StatusOK
	if kind == "unhealthy" {
		status = http.StatusServiceUnavailable
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
	fmt.Printf("%shttp://%s\n", ReadyPrefix, ln.Addr())
	http.Serve(ln, mux)
	return 0
}

func exe(t *testing.T) string {
	t.Helper()
	p, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gone reports whether nothing accepts connections at the base URL.
func gone(url string) bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// reaped waits until the process whose pid the helper wrote to pidfile no
// longer exists (Spawn waits for its children, so no zombie remains).
func reaped(t *testing.T, pidfile string) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		// Killed before it got that far; Spawn waited for it anyway.
		t.Logf("helper wrote no pid: %v", err)
		return
	}
	pid, _ := strconv.Atoi(string(b))
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("child %d still exists", pid)
}

func TestSpawnStartsAndStopStops(t *testing.T) {
	t.Parallel()
	p, err := Spawn(context.Background(), exe(t), "ok", nil, os.Stderr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q, want a loopback URL", p.URL)
	}
	resp, err := http.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p.Exited() {
		t.Fatal("Exited is true while the child runs")
	}
	// Pid is the child's: its /proc entry runs this test binary, and it
	// is not us.
	pid := p.Pid()
	if pid <= 0 || pid == os.Getpid() {
		t.Fatalf("Pid %d", pid)
	}
	child := "/proc/" + strconv.Itoa(pid) + "/exe"
	if got, err := os.Readlink(child); err != nil || got != exe(t) {
		t.Fatalf("%s -> %q (%v), want %s", child, got, err, exe(t))
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v (a child ended by SIGTERM is a clean stop)", err)
	}
	if !p.Exited() {
		t.Fatal("Exited is false after Stop")
	}
	if !gone(p.URL) {
		t.Fatalf("%s still accepts connections after Stop", p.URL)
	}
	// Stop is idempotent: again, and concurrently, returns at once.
	start := time.Now()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- p.Stop() }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("second Stop: %v", err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a repeated Stop took %s, want at once", d)
	}
	var nilp *Process
	if err := nilp.Stop(); err != nil {
		t.Fatalf("nil Stop: %v", err)
	}
	if nilp.Pid() != 0 {
		t.Fatal("nil Pid is not 0")
	}
}

func TestSpawnStopEscalatesToKill(t *testing.T) {
	t.Parallel()
	p, err := Spawn(context.Background(), exe(t), "ignore-term", nil, os.Stderr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v (SIGKILL after the grace is a clean stop)", err)
	}
	if !gone(p.URL) {
		t.Fatalf("%s still accepts connections after Stop", p.URL)
	}
}

func TestSpawnChildExitsBeforeReady(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	p, err := Spawn(context.Background(), exe(t), "exit", []string{"--pidfile", pidfile}, io.Discard, 10*time.Second)
	if err == nil {
		p.Stop()
		t.Fatal("Spawn succeeded for a child that exited")
	}
	t.Log(err)
	for _, want := range []string{"exited before it was ready", "exit status 7", "serve exit", "bad knob", "giving up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	reaped(t, pidfile)
}

func TestSpawnNeverReadyTimesOut(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	p, err := Spawn(context.Background(), exe(t), "silent", []string{"--pidfile", pidfile}, os.Stderr, time.Second)
	if err == nil {
		p.Stop()
		t.Fatal("Spawn succeeded for a child that never became ready")
	}
	if !strings.Contains(err.Error(), "not ready within 1s") {
		t.Fatalf("error %q does not say it timed out", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("Spawn returned after %s with a 1s timeout", d)
	}
	reaped(t, pidfile)
}

func TestSpawnUnhealthyTimesOut(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	p, err := Spawn(context.Background(), exe(t), "unhealthy", []string{"--pidfile", pidfile}, os.Stderr, 2*time.Second)
	if err == nil {
		p.Stop()
		t.Fatal("Spawn succeeded for a child whose /healthz fails")
	}
	if !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "not healthy within") {
		t.Fatalf("error %q does not name the failing health check", err)
	}
	reaped(t, pidfile)
}

func TestSpawnCancelled(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the child is surely running.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(pidfile); err == nil {
				break
			}
		}
		cancel()
	}()
	p, err := Spawn(ctx, exe(t), "silent", []string{"--pidfile", pidfile}, os.Stderr, time.Minute)
	if err == nil {
		p.Stop()
		t.Fatal("Spawn succeeded after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	reaped(t, pidfile)
}

func TestHealthURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:1":  "http://127.0.0.1:1/healthz",
		"ws://127.0.0.1:2":    "http://127.0.0.1:2/healthz",
		"wss://[::1]:3":       "https://[::1]:3/healthz",
		"https://localhost:4": "https://localhost:4/healthz",
		"tcp://127.0.0.1:5":   "http://127.0.0.1:5/healthz",
	} {
		if got := HealthURL(in); got != want {
			t.Errorf("HealthURL(%q) = %q, want %q", in, got, want)
		}
	}
}
