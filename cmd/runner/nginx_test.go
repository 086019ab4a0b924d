//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// findNginx returns the nginx binary; without one the test is skipped
// locally and fails under CI (.ci/run installs nginx-light).
func findNginx(t *testing.T) string {
	t.Helper()
	return findExternal(t, "nginx", "nginx-light")
}

// startNginx starts nginx as targets/nginx/nginx.conf says, but on a free
// loopback port with its temporary paths and pid file in a temporary
// prefix, in the foreground as a child process in its own process group.
// It returns the base URL; nginx is stopped (SIGQUIT, then SIGKILL to the
// group) when the test ends.
func startNginx(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "targets", "nginx"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(src, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	if err := os.CopyFS(filepath.Join(prefix, "html"), os.DirFS(filepath.Join(src, "html"))); err != nil {
		t.Fatal(err)
	}
	// As the README does with `mkdir -p /tmp/runner-nginx`.
	if err := os.Mkdir(filepath.Join(prefix, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	return "http://" + runNginx(t, prefix, func(port int) string {
		c := string(conf)
		for old, new := range map[string]string{
			"listen 127.0.0.1:8089;": fmt.Sprintf("listen 127.0.0.1:%d;", port),
			"/tmp/runner-nginx/":     filepath.Join(prefix, "tmp") + "/",
		} {
			if !strings.Contains(c, old) {
				t.Fatalf("targets/nginx/nginx.conf no longer contains %q", old)
			}
			c = strings.ReplaceAll(c, old, new)
		}
		return c
	})
}

// runNginx starts nginx with prefix as its prefix and the configuration
// conf(port) for a free loopback port (three tries, in case the port is
// taken meanwhile), in the foreground as a child process in its own
// process group. It returns host:port once nginx accepts connections;
// nginx is stopped (SIGQUIT, then SIGKILL to the group) when the test
// ends.
func runNginx(t *testing.T, prefix string, conf func(port int) string) string {
	t.Helper()
	bin := findNginx(t)
	var lastErr string
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		if err := os.WriteFile(filepath.Join(prefix, "nginx.conf"), []byte(conf(port)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-p", prefix, "-c", "nginx.conf", "-e", "stderr",
			"-g", fmt.Sprintf("daemon off; pid %s;", filepath.Join(prefix, "nginx.pid")))
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		// SIGQUIT is nginx's graceful stop: workers finish, then exit.
		done, stop := startGroup(t, cmd, syscall.SIGQUIT)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			select {
			case <-done:
				// Exited: most likely the port was taken meanwhile.
				lastErr = errb.String()
			default:
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					t.Cleanup(func() {
						stop()
						// Every worker is gone with the master: nothing
						// listens any more.
						if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
							c.Close()
							t.Errorf("nginx still listens on %s after stop", addr)
						}
					})
					return addr
				}
				continue
			}
			break
		}
		stop()
		if lastErr == "" {
			lastErr = "not listening within 10 s: " + errb.String()
		}
	}
	t.Fatalf("nginx did not start: %s", lastErr)
	return ""
}

// The real target: nginx serving a static file, driven with and without
// keep-alive. With keep-alive the 4 connections carry all 2000 requests;
// without it every request opens its own connection.
func TestNginxKeepAliveVsNot(t *testing.T) {
	base := startNginx(t)
	t.Setenv("NGINX_URL", base)
	dir := t.TempDir()
	for _, tc := range []struct {
		file   string
		opened float64 // want connections_opened
	}{
		{"nginx-keepalive.yaml", 4},
		{"nginx-no-keepalive.yaml", 2000},
	} {
		jsonPath := filepath.Join(dir, strings.TrimSuffix(tc.file, ".yaml")+".json")
		tsvPath := filepath.Join(dir, "results.tsv") // not the scenario's results/ in the source tree
		code, stdout, stderr := cli(t, "run", "--log-level", "warn", "--json", jsonPath, "--tsv", tsvPath, filepath.Join("..", "..", "scenarios", tc.file))
		t.Logf("runner run scenarios/%s: exit %d\n%s", tc.file, code, stdout)
		if !passedOrGeneratorBound(t, code, stdout) {
			t.Errorf("%s: exit %d, want 0\nstderr:\n%s", tc.file, code, stderr)
			continue
		}
		rep := readJSON(t, jsonPath)
		ph := rep["result"].(map[string]any)["phases"].([]any)[0]
		requests := jsonNum(t, ph, "summary", "requests")
		opened := jsonNum(t, ph, "summary", "connections_opened")
		conns := jsonNum(t, ph, "connections_requested")
		if requests != 2000 || jsonNum(t, ph, "summary", "ok") != 2000 || jsonNum(t, ph, "summary", "errors") != 0 {
			t.Errorf("%s: requests %v ok %v errors %v, want 2000 ok", tc.file, requests, jsonNum(t, ph, "summary", "ok"), jsonNum(t, ph, "summary", "errors"))
		}
		if conns != 4 || opened != tc.opened {
			t.Errorf("%s: %v connections, %v opened, want 4 and %v", tc.file, conns, opened, tc.opened)
		}
	}
}
