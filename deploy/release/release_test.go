package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
	"golang.org/x/mod/modfile"
	"gopkg.in/yaml.v3"
)

const root = "../.."

// goreleaser is the part of .goreleaser.yaml (version 2) that this
// package checks, decoded with KnownFields: a key that is not below is an
// error here, so a new key gets a field, and a misspelt one is caught.
type goreleaser struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Changelog any `yaml:"changelog"`
}

func loadGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if g.Version != 2 {
		t.Fatalf(".goreleaser.yaml: version %d, want 2", g.Version)
	}
	if len(g.Builds) != 1 || len(g.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds and %d archives, want one each", len(g.Builds), len(g.Archives))
	}
	return g
}

// six is the release's platform list, as README "Platforms" promises it.
var six = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}

// scriptPlatforms returns build.sh's default PLATFORMS, sorted.
func scriptPlatforms(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("build.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PLATFORMS=\$\{PLATFORMS:-([^}]*)\}$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("build.sh sets no default PLATFORMS=${PLATFORMS:-…}")
	}
	p := strings.Fields(string(m[1]))
	slices.Sort(p)
	return p
}

// TestPlatforms: goreleaser and build.sh build the same six platforms, and
// CI builds them all with build.sh.
func TestPlatforms(t *testing.T) {
	g := loadGoreleaser(t).Builds[0]
	var gr []string
	for _, os := range g.Goos {
		for _, arch := range g.Goarch {
			gr = append(gr, os+"/"+arch)
		}
	}
	slices.Sort(gr)
	if !slices.Equal(gr, six) {
		t.Errorf(".goreleaser.yaml builds %v, want %v", gr, six)
	}
	if p := scriptPlatforms(t); !slices.Equal(p, six) {
		t.Errorf("build.sh builds %v, want %v", p, six)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci/run"))
	if err != nil {
		t.Fatal(err)
	}
	var runs bool
	for _, line := range strings.Split(string(ci), "\n") {
		w := strings.Fields(line)
		if i := slices.Index(w, "deploy/release/build.sh"); i >= 0 && !strings.Contains(line, "PLATFORMS=") {
			runs = true
		}
	}
	if !runs {
		t.Error(".ci/run does not run deploy/release/build.sh with its six platforms")
	}
}

// TestGoreleaserBuild: static, trimmed and stripped, the version and the
// commit linked into variables that exist, bare binaries named as
// build.sh names them, SHA-256 checksums in the file build.sh writes.
func TestGoreleaserBuild(t *testing.T) {
	g := loadGoreleaser(t)
	b := g.Builds[0]
	if b.Main != "./cmd/runner" || b.Binary != "runner" {
		t.Errorf("builds %s as %s, want ./cmd/runner as runner", b.Main, b.Binary)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("env %v: CGO is not off (the binaries must be static)", b.Env)
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("flags %v: no -trimpath", b.Flags)
	}
	if len(b.Ldflags) != 1 {
		t.Fatalf("ldflags %q, want one line", b.Ldflags)
	}
	x, problems := checkLdflags(t, b.Ldflags[0])
	for _, p := range problems {
		t.Errorf(".goreleaser.yaml: %s", p)
	}
	if x["Version"] != "{{.Tag}}" || x["Commit"] != "{{.FullCommit}}" {
		t.Errorf(".goreleaser.yaml links Version=%q Commit=%q, want {{ .Tag }} and {{ .FullCommit }}", x["Version"], x["Commit"])
	}
	a := g.Archives[0]
	if !slices.Equal(a.Formats, []string{"binary"}) {
		t.Errorf("archives formats %v, want [binary] (bare binaries, as build.sh)", a.Formats)
	}
	// build.sh names a binary runner_${VERSION}_${goos}_${goarch}.
	if want := "{{ .ProjectName }}_{{ .Tag }}_{{ .Os }}_{{ .Arch }}"; a.NameTemplate != want || g.ProjectName != "runner" {
		t.Errorf("binaries named %q (project %s), want %q as build.sh names them", a.NameTemplate, g.ProjectName, want)
	}
	if g.Checksum.Algorithm != "sha256" || g.Checksum.NameTemplate != "SHA256SUMS" {
		t.Errorf("checksum %+v, want sha256 into SHA256SUMS", g.Checksum)
	}
}

// checkLdflags checks a -ldflags value: -s -w, and -X for the version and
// the commit and nothing else, each naming a package-level string variable
// of internal/sysinfo (a -X that names none is silently ignored by the
// linker, so a renamed variable would otherwise go unnoticed). It returns
// the values by variable name ("Version", "Commit") and what is wrong,
// one line each.
func checkLdflags(t *testing.T, ldflags string) (map[string]string, []string) {
	t.Helper()
	// goreleaser renders its templates before it splits the flags.
	ldflags = regexp.MustCompile(`\{\{.*?\}\}`).ReplaceAllStringFunc(ldflags, func(e string) string { return strings.ReplaceAll(e, " ", "") })
	w, err := shellwords.Parse(ldflags)
	if err != nil {
		return nil, []string{fmt.Sprintf("ldflags %q: %v", ldflags, err)}
	}
	var problems []string
	if !slices.Contains(w, "-s") || !slices.Contains(w, "-w") {
		problems = append(problems, fmt.Sprintf("ldflags %q: not stripped (-s -w)", ldflags))
	}
	x := map[string]string{}
	for i, f := range w {
		if f != "-X" || i+1 >= len(w) {
			continue
		}
		target, value, _ := strings.Cut(w[i+1], "=")
		dot := strings.LastIndex(target, ".")
		pkg, name := target[:max(dot, 0)], target[dot+1:]
		if pkg != "github.com/runner-dev/runner/internal/sysinfo" || !stringVar(t, pkg, name) {
			problems = append(problems, fmt.Sprintf("-X %s: no package-level string variable %s in internal/sysinfo", target, name))
		}
		x[name] = value
	}
	if len(x) != 2 || x["Version"] == "" || x["Commit"] == "" {
		problems = append(problems, fmt.Sprintf("ldflags %q set %v, want sysinfo.Version and sysinfo.Commit", ldflags, x))
	}
	return x, problems
}

// stringVar reports whether the package pkg of this module declares a
// package-level variable name of type string, or initialised with a string
// literal: what -X can set.
func stringVar(t *testing.T, pkg, name string) bool {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod := modfile.ModulePath(gomod)
	rel, ok := strings.CutPrefix(pkg, mod+"/")
	if !ok {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel), "*.go"))
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				for i, n := range v.Names {
					if n.Name != name {
						continue
					}
					if id, ok := v.Type.(*ast.Ident); ok && id.Name == "string" {
						return true
					}
					if v.Type == nil && i < len(v.Values) {
						if l, ok := v.Values[i].(*ast.BasicLit); ok && l.Kind == token.STRING {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// TestStringVarFindsNone: the check above does tell a variable that -X can
// set from one it cannot, or from none.
func TestStringVarFindsNone(t *testing.T) {
	for _, c := range []struct {
		pkg, name string
		want      bool
	}{
		{"github.com/runner-dev/runner/internal/sysinfo", "Version", true},
		{"github.com/runner-dev/runner/internal/sysinfo", "Commit", true},
		{"github.com/runner-dev/runner/internal/sysinfo", "Revision", false}, // no such variable
		{"github.com/runner-dev/runner/internal/sysinfo", "Collect", false},  // a function
		{"github.com/runner-dev/runner/internal/nosuch", "Version", false},
		{"example.com/other/sysinfo", "Version", false}, // not this module
	} {
		if got := stringVar(t, c.pkg, c.name); got != c.want {
			t.Errorf("%s.%s: %v, want %v", c.pkg, c.name, got, c.want)
		}
	}
}

// TestBuildScript runs build.sh for this machine's platform only (the six
// cross builds take minutes; CI runs them all) and checks what it wrote:
// the binary under its release name, which prints the version and commit
// it was given, and a SHA256SUMS line that is its checksum.
func TestBuildScript(t *testing.T) {
	bash := lookBash(t)
	dist := t.TempDir()
	const version, commit = "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	cmd := exec.Command(bash, "build.sh", dist)
	cmd.Env = append(os.Environ(), "VERSION="+version, "COMMIT="+commit, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	name := fmt.Sprintf("runner_%s_%s_%s", version, runtime.GOOS, runtime.GOARCH)
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin, err := os.ReadFile(filepath.Join(dist, name))
	if err != nil {
		t.Fatalf("build.sh wrote no %s: %v", name, err)
	}
	out, err := exec.Command(filepath.Join(dist, name), "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", name, err)
	}
	want := fmt.Sprintf("runner %s (commit %s, go", version, commit)
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("%s version: %q, want it to begin %q", name, out, want)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", sums, want)
	}
}

// TestBuildScriptRefuses: a platform that is not OS/ARCH is an error that
// names it, before anything is built.
func TestBuildScriptRefuses(t *testing.T) {
	bash := lookBash(t)
	cmd := exec.Command(bash, "build.sh", t.TempDir())
	cmd.Env = append(os.Environ(), "VERSION=v0", "COMMIT=c", "PLATFORMS=linux")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "PLATFORMS: linux is not OS/ARCH") {
		t.Errorf("PLATFORMS=linux: %v\n%s", err, out)
	}
}

// lookBash returns bash's path; without it the test is skipped, but fails
// under CI=true, where bash must be.
func lookBash(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("bash not found, and CI must run this test")
	}
	t.Skip("bash not found")
	return ""
}
