package targets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ReadyPrefix starts the line a reference target prints on stdout once it
// accepts connections; the rest of the line is its base URL.
const ReadyPrefix = "listening on "

// Process is a reference target running as a child process.
type Process struct {
	// URL is the target's base URL, e.g. http://127.0.0.1:40123.
	URL  string
	cmd  *exec.Cmd
	done chan error
}

// Spawn starts `exe serve kind --listen 127.0.0.1:0 args...` in its own
// process group, waits until it prints its ready line and answers
// GET /healthz, and returns it. The child is killed if this process dies
// (Linux parent-death signal; other systems have none, so a runner that is
// itself killed may leave its target running there: see procAttr). Its stderr goes to stderr. Errors: the
// child failed to start, exited early (its exit status and last output
// are in the message), or was not ready within timeout.
func Spawn(ctx context.Context, exe, kind string, args []string, stderr io.Writer, timeout time.Duration) (*Process, error) {
	argv := append([]string{"serve", kind, "--listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(exe, argv...)
	cmd.SysProcAttr = procAttr()
	last := &tail{}
	cmd.Stderr = io.MultiWriter(stderr, last)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("spawn %s target: %w", kind, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spawn %s target: %w", kind, err)
	}
	p := &Process{cmd: cmd, done: make(chan error, 1)}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); !sent && strings.HasPrefix(line, ReadyPrefix) {
				urls <- strings.TrimSpace(strings.TrimPrefix(line, ReadyPrefix))
				sent = true
			} else if !sent {
				last.Write([]byte(line + "\n"))
			}
		}
		close(urls)
		p.done <- cmd.Wait()
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case u, ok := <-urls:
		if !ok {
			err := <-p.done
			msg := fmt.Sprintf("%s target exited before it was ready: %v (runner serve %s)", kind, err, strings.Join(argv[1:], " "))
			if out := last.String(); out != "" {
				msg += "; its last output: " + out
			}
			return nil, errors.New(msg)
		}
		p.URL = u
	case <-deadline.C:
		p.Stop()
		return nil, fmt.Errorf("%s target not ready within %s", kind, timeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if err := waitHealthy(ctx, HealthURL(p.URL), timeout); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s target at %s: %w", kind, p.URL, err)
	}
	return p, nil
}

// tail keeps the last tailSize bytes written to it, for error messages.
// It is safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 512

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(b), nil
}

// String is the kept output, trimmed, with its lines joined by " | ".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(t.buf)), "\n", " | ")), " ")
}

func waitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	end := time.Now().Add(timeout)
	var last error
	for time.Now().Before(end) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("healthz answered %s", resp.Status)
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not healthy within %s: %v", timeout, last)
}

// Stop ends the target: SIGTERM to its process group, then SIGKILL after
// 2 s (on Windows, which has neither, os.Process.Kill at once: see
// terminate). It waits for the process and is safe to call more than
// once.
func (p *Process) Stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	terminate(p.cmd.Process)
	select {
	case err := <-p.done:
		p.done <- err
		return exitErr(err)
	case <-time.After(2 * time.Second):
		kill(p.cmd.Process)
		err := <-p.done
		p.done <- err
		return exitErr(err)
	}
}

// Pid is the target's process id (the leader of its process group).
func (p *Process) Pid() int {
	if p == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the target has exited on its own (crashed).
func (p *Process) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if stopped(ee) {
			return nil
		}
		if ee.ExitCode() == 0 {
			return nil
		}
	}
	return err
}

// Self is the path of the running executable, which serves the reference
// targets as `runner serve KIND`.
func Self() (string, error) { return os.Executable() }

// HealthURL is the plain-HTTP health check of a reference target at base:
// base + "/healthz", with a ws:// or wss:// scheme read as http:// or
// https://, and tcp:// as http:// (a WebSocket or binary-frame target
// serves its health check on the same port).
func HealthURL(base string) string {
	switch {
	case strings.HasPrefix(base, "ws://"):
		base = "http://" + strings.TrimPrefix(base, "ws://")
	case strings.HasPrefix(base, "wss://"):
		base = "https://" + strings.TrimPrefix(base, "wss://")
	case strings.HasPrefix(base, "tcp://"):
		base = "http://" + strings.TrimPrefix(base, "tcp://")
	}
	return base + "/healthz"
}
