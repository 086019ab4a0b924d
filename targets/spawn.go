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
	"syscall"
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
// (Linux parent-death signal). Its stderr goes to stderr. Errors: the
// child failed to start, exited early (its exit status and last output
// are in the message), or was not ready within timeout.
func Spawn(ctx context.Context, exe, kind string, args []string, stderr io.Writer, timeout time.Duration) (*Process, error) {
	argv := append([]string{"serve", kind, "--listen", "127.0.0.1:0"}, args...)
	cmd := exec.Command(exe, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = stderr
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
			return nil, fmt.Errorf("%s target exited before it was ready: %v (runner serve %s)", kind, err, strings.Join(argv[1:], " "))
		}
		p.URL = u
	case <-deadline.C:
		p.Stop()
		return nil, fmt.Errorf("%s target not ready within %s", kind, timeout)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if err := waitHealthy(ctx, p.URL+"/healthz", timeout); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s target at %s: %w", kind, p.URL, err)
	}
	return p, nil
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
// 2 s. It waits for the process and is safe to call more than once.
func (p *Process) Stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return exitErr(err)
	case <-time.After(2 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		err := <-p.done
		p.done <- err
		return exitErr(err)
	}
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
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL) {
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
