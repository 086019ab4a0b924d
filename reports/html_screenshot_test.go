//go:build unix

package reports

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
)

// findChromium returns a Chromium binary; without one the test is
// skipped locally and fails under CI (.ci/run installs chromium).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found, and CI must run this test (.ci/run installs chromium)")
	}
	t.Skip("chromium not found (Debian: apt-get install chromium)")
	return ""
}

// headless runs bin headless on the page at path with args and returns
// its standard output. The browser and its helper processes are one
// process group, killed when the browser exits or after a minute and a
// half. The flags keep it off the network (the page fetches nothing
// either) and give it a profile of its own.
func headless(t *testing.T, bin, path string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--disable-extensions", "--user-data-dir=" + t.TempDir(),
		// Run the page's scripts to the end before the dump or the shot.
		"--virtual-time-budget=10000"}, args...)
	all = append(all, "file://"+path)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind
	}
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, errOut.Bytes())
	}
	return out.Bytes()
}

// TestHTMLScreenshot opens the report in headless Chromium: every chart
// is drawn (a canvas each, no chart-error), and its screenshot is not
// blank and differs, where the charts are, from the screenshot of the
// same page without its scripts. RUNNER_HTML_OUT=DIR keeps the
// screenshot there.
func TestHTMLScreenshot(t *testing.T) {
	bin := findChromium(t)
	old := intervalPercentiles
	t.Cleanup(func() { intervalPercentiles = old })
	intervalPercentiles = func(s *measure.Summary) []pctPoint {
		var pts []pctPoint
		for i := 1; i <= 10; i++ {
			ms := time.Duration(i) * time.Millisecond
			pts = append(pts, pctPoint{T: float64(i), P50: ms, P90: 2 * ms, P99: 3 * ms})
		}
		return pts
	}
	r := fixture(t)
	r.Verdict.Rules = append(r.Verdict.Rules, engine.RuleResult{Source: "throughput > 90", Phase: "steady", Status: rules.Pass})
	dir := t.TempDir()
	doc := renderHTML(t, r)
	page, bare := filepath.Join(dir, "report.html"), filepath.Join(dir, "report-no-scripts.html")
	// The same page without its scripts, as a browser without JavaScript
	// shows it.
	noScripts := regexp.MustCompile(`(?s)<script>.*?</script>`).ReplaceAllString(doc, "")
	if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bare, []byte(noScripts), 0o644); err != nil {
		t.Fatal(err)
	}
	charts, ids := pageCharts(t, doc, fixtureURL)
	want := 2 * 6 // two repeats of steady, six charts each
	if len(ids) != want || len(charts) != want {
		t.Fatalf("%d chart elements and %d charts' data, want %d", len(ids), len(charts), want)
	}

	dom := string(headless(t, bin, page, "--dump-dom"))
	if m := regexp.MustCompile(`data-charts-drawn="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != fmt.Sprint(want) {
		t.Errorf("data-charts-drawn %v, want %d: the page's script did not draw every chart", m, want)
	}
	if n := strings.Count(dom, "<canvas"); n < want {
		t.Errorf("%d canvases, want %d", n, want)
	}
	if strings.Contains(dom, `class="plot chart-error"`) {
		t.Errorf("a chart was not drawn:\n%s", regexp.MustCompile(`chart not drawn: [^<]*`).FindAllString(dom, -1))
	}

	shot := func(page, name string) image.Image {
		path := filepath.Join(dir, name)
		headless(t, bin, page, "--screenshot="+path, "--window-size=1400,3200")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 3200 {
			t.Fatalf("%s is %v, want 1400×3200", name, b)
		}
		return img
	}
	with := shot(page, "with-scripts.png")
	without := shot(bare, "without-scripts.png")
	colours := map[[3]uint32]bool{}
	differ, total := 0, 0
	b := with.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r1, g1, b1, _ := with.At(x, y).RGBA()
			r2, g2, b2, _ := without.At(x, y).RGBA()
			colours[[3]uint32{r1 >> 8, g1 >> 8, b1 >> 8}] = true
			if r1 != r2 || g1 != g2 || b1 != b2 {
				differ++
			}
			total++
		}
	}
	if len(colours) < 50 {
		t.Errorf("the screenshot has %d colours: blank?", len(colours))
	}
	// The charts take a good part of the page below the tables; without
	// scripts their places hold a line of text.
	if differ < total/50 {
		t.Errorf("the screenshots with and without scripts differ in %d of %d pixels: no charts drawn?", differ, total)
	}
	t.Logf("%d colours; %d of %d sampled pixels differ without scripts", len(colours), differ, total)
	if out := os.Getenv("RUNNER_HTML_OUT"); out != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "with-scripts.png")); err == nil {
			_ = os.WriteFile(filepath.Join(out, "TestHTMLScreenshot.png"), b, 0o644)
		}
	}
}

// TestHTMLStepsDrawn: in headless Chromium the page of a flow run draws
// every chart, the flow steps' charts included.
func TestHTMLStepsDrawn(t *testing.T) {
	bin := findChromium(t)
	doc := renderHTML(t, flowFixture(t))
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ids := pageCharts(t, doc, func(u string) bool { return u == "http://127.0.0.1:8080" })
	dom := string(headless(t, bin, page, "--dump-dom"))
	if m := regexp.MustCompile(`data-charts-drawn="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != fmt.Sprint(len(ids)) {
		t.Errorf("data-charts-drawn %v, want %d: the page's script did not draw every chart", m, len(ids))
	}
	if strings.Contains(dom, `class="plot chart-error"`) {
		t.Errorf("a chart was not drawn:\n%s", regexp.MustCompile(`chart not drawn: [^<]*`).FindAllString(dom, -1))
	}
}

// TestHTMLFlowPageFitsIn1400: the reviewer's page of a flow run of three
// repeats, in headless Chromium 1400 px wide. No table reaches past the
// page's right edge unless it scrolls in a box of its own (the defect:
// the per-repeat phase table was wider than the page, repeat 3 cut
// off), and no chart's legend puts a series' value on a line below its
// label (the defect: the in-system label "iterations in progress,
// thinking included (ok, λ·W per second)" wrapped its value).
func TestHTMLFlowPageFitsIn1400(t *testing.T) {
	bin := findChromium(t)
	r := flowFixture(t)
	third := *r.Result.Phases[1]
	third.Repeat = 3
	r.Result.Phases = append(r.Result.Phases, &third)
	r.Scenario.Repeats, r.Plan.Repeats = 3, 3
	r.Verdict = engine.Judge(r.Plan, r.Result)
	r.Across = engine.Across(r.Result)
	doc := renderHTML(t, r)
	// Measured after the page's own scripts have drawn the charts.
	const measure = `<script>
window.addEventListener("load", function(){
  var w = document.documentElement.clientWidth, out = [];
  document.querySelectorAll('table').forEach(function(t, i){
    var box = t.parentElement, s = getComputedStyle(box);
    var scrolls = (s.overflowX === 'auto' || s.overflowX === 'scroll') && box.getBoundingClientRect().right <= w + 1;
    if (t.getBoundingClientRect().right > w + 1 && !scrolls) out.push('table ' + i + ' ends at ' + Math.round(t.getBoundingClientRect().right) + ' px');
  });
  document.querySelectorAll('.u-legend .u-series').forEach(function(row){
    var l = row.querySelector('.u-label'), v = row.querySelector('.u-value');
    if (l && v && v.getBoundingClientRect().top >= l.getBoundingClientRect().bottom - 1) out.push('legend "' + l.textContent + '" wraps its value');
  });
  document.body.setAttribute('data-fit', out.length ? out.join('; ') : 'ok');
});
</script>
</body>`
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(strings.Replace(doc, "</body>", measure, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, page, "--dump-dom", "--window-size=1400,1200"))
	if out := os.Getenv("RUNNER_HTML_OUT"); out != "" {
		_ = os.WriteFile(filepath.Join(out, "TestHTMLFlowPageFitsIn1400.html"), []byte(doc), 0o644)
	}
	m := regexp.MustCompile(`data-fit="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the measuring script did not run")
	}
	if m[1] != "ok" {
		t.Errorf("at 1400 px: %s", m[1])
	}
}
