package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"golang.org/x/mod/modfile"
)

// stage is one FROM block of a Dockerfile: its base image, its name (AS
// NAME, "" without) and its instructions after FROM.
type stage struct {
	from, name string
	line       int
	steps      []*parser.Node
}

// args returns an instruction's arguments (the words after its keyword;
// a shell-form RUN has one, the whole command line).
func args(n *parser.Node) []string {
	var a []string
	for x := n.Next; x != nil; x = x.Next {
		a = append(a, x.Value)
	}
	return a
}

func stages(src []byte) ([]stage, error) {
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	var st []stage
	for _, n := range res.AST.Children {
		n.Value = strings.ToLower(n.Value) // the keyword as written
		if n.Value == "from" {
			a := args(n)
			s := stage{from: a[0], line: n.StartLine}
			if len(a) == 3 && strings.EqualFold(a[1], "as") {
				s.name = a[2]
			}
			st = append(st, s)
			continue
		}
		if len(st) == 0 {
			continue // ARG before FROM
		}
		st[len(st)-1].steps = append(st[len(st)-1].steps, n)
	}
	return st, nil
}

// checkDockerfile returns what is wrong with the image definition src,
// one line each: multi-stage, the builder on go.mod's Go, the binary built
// static with the version and commit from build arguments; the final
// stage distroless, holding that binary alone, run as a numeric non-root
// user, with an exec-form ENTRYPOINT.
func checkDockerfile(t *testing.T, src []byte) []string {
	t.Helper()
	st, err := stages(src)
	if err != nil {
		return []string{err.Error()}
	}
	if len(st) < 2 {
		return []string{fmt.Sprintf("%d stage(s): want a builder stage and the image's", len(st))}
	}
	var problems []string
	bad := func(line int, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", line, fmt.Sprintf(format, a...)))
	}
	final := st[len(st)-1]
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") {
		bad(final.line, "the image is based on %s, want gcr.io/distroless/static… (no shell, no libc: the static binary alone)", final.from)
	}

	// The final stage: only these instructions, one COPY of the binary.
	var copies, users, entrypoints []*parser.Node
	workdir := -1
	for i, n := range final.steps {
		switch n.Value {
		case "copy":
			copies = append(copies, n)
		case "user":
			users = append(users, n)
		case "entrypoint":
			entrypoints = append(entrypoints, n)
		case "workdir":
			workdir = i
		case "cmd", "label":
		default:
			bad(n.StartLine, "%s in the image's stage: want only the binary, its user, workdir and entrypoint", strings.ToUpper(n.Value))
		}
	}
	if len(copies) != 1 || len(entrypoints) != 1 || len(users) != 1 {
		return append(problems, fmt.Sprintf("the image's stage has %d COPY, %d USER and %d ENTRYPOINT, want one each", len(copies), len(users), len(entrypoints)))
	}
	cp := copies[0]
	ca := args(cp)
	var builder *stage
	for i := range st[:len(st)-1] {
		if slices.Equal(cp.Flags, []string{"--from=" + st[i].name}) {
			builder = &st[i]
		}
	}
	if builder == nil || len(ca) != 2 {
		return append(problems, fmt.Sprintf("line %d: COPY %v %v: want one file --from a builder stage", cp.StartLine, cp.Flags, ca))
	}

	// USER uid[:gid], numeric (Kubernetes' runAsNonRoot can check only a
	// number), not root, before WORKDIR (which BuildKit then creates
	// owned by that user).
	u := users[0]
	ids := strings.Split(strings.Join(args(u), " "), ":")
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err != nil || n <= 0 || len(ids) > 2 {
			bad(u.StartLine, "USER %s: want a numeric uid[:gid] other than root (0)", strings.Join(args(u), " "))
			break
		}
	}
	if workdir < 0 || workdir < slices.Index(final.steps, u) {
		bad(u.StartLine, "no WORKDIR after USER: the results directory would be root's")
	}

	// ENTRYPOINT ["/path/runner"], the copied binary, in exec form (no
	// shell in the image; signals reach runner itself).
	e := entrypoints[0]
	if !e.Attributes["json"] {
		bad(e.StartLine, "ENTRYPOINT in shell form: want the exec form [\"%s\"]", ca[1])
	} else if ea := args(e); !slices.Equal(ea, []string{ca[1]}) {
		bad(e.StartLine, "ENTRYPOINT %q: want [%q], the binary copied", ea, ca[1])
	}

	// The builder: Go from go.mod, and the go build that writes what is
	// copied.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(builder.from, "golang:"+mf.Go.Version+"-") {
		bad(builder.line, "builder %s: want golang:%s-… (go.mod's Go)", builder.from, mf.Go.Version)
	}
	declared := map[string]bool{}
	var built bool
	for _, n := range builder.steps {
		switch n.Value {
		case "arg":
			for _, a := range args(n) {
				name, _, _ := strings.Cut(a, "=")
				declared[name] = true
			}
		case "run":
			w, err := shellwords.Parse(strings.Join(args(n), " "))
			if err != nil {
				bad(n.StartLine, "RUN: %v", err)
				continue
			}
			i := slices.Index(w, "go")
			if i < 0 || i+1 >= len(w) || w[i+1] != "build" {
				continue
			}
			built = true
			if !slices.Contains(w[:i], "CGO_ENABLED=0") {
				bad(n.StartLine, "go build with CGO on: the binary must be static for a distroless/static base")
			}
			if !slices.Contains(w, "-trimpath") {
				bad(n.StartLine, "go build without -trimpath")
			}
			if o := slices.Index(w, "-o"); o < 0 || o+1 >= len(w) || w[o+1] != ca[0] {
				bad(n.StartLine, "go build does not write %s, which the image copies", ca[0])
			}
			if w[len(w)-1] != "./cmd/runner" {
				bad(n.StartLine, "go build %s, want ./cmd/runner", w[len(w)-1])
			}
			l := slices.Index(w, "-ldflags")
			if l < 0 || l+1 >= len(w) {
				bad(n.StartLine, "go build without -ldflags")
				continue
			}
			x, ps := checkLdflags(t, w[l+1])
			for _, p := range ps {
				bad(n.StartLine, "%s", p)
			}
			for _, v := range []string{"Version", "Commit"} {
				arg := strings.ToUpper(v)
				if x[v] != "${"+arg+"}" || !declared[arg] {
					bad(n.StartLine, "-X …%s=%s: want ${%s}, from an ARG %s declared before it", v, x[v], arg, arg)
				}
			}
		}
	}
	if !built {
		bad(builder.line, "the builder stage runs no go build")
	}
	return problems
}

func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkDockerfile(t, src) {
		t.Errorf("Dockerfile: %s", p)
	}
}

// TestDockerfileFindsErrors: each change below breaks the image as
// described, and checkDockerfile says so, so that TestDockerfile's
// silence means something.
func TestDockerfileFindsErrors(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ from, to, want string }{
		{"USER 65532:65532", "USER root", "numeric"},
		{"USER 65532:65532", "USER 0", "other than root"},
		{"USER 65532:65532\nWORKDIR /work", "WORKDIR /work\nUSER 65532:65532", "no WORKDIR after USER"},
		{`ENTRYPOINT ["/usr/local/bin/runner"]`, "ENTRYPOINT /usr/local/bin/runner", "shell form"},
		{`ENTRYPOINT ["/usr/local/bin/runner"]`, `ENTRYPOINT ["/runner"]`, "the binary copied"},
		{"COPY --from=build /out/runner", "COPY --from=build /out/runner /etc/passwd", "want one file"},
		{"ENTRYPOINT", "COPY . /src\nENTRYPOINT", "one each"},
		{"ENTRYPOINT", "RUN true\nENTRYPOINT", "RUN in the image's stage"},
		{"FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:bookworm-slim", "distroless"},
		{"golang:1.26.8-bookworm", "golang:1.25.0-bookworm", "go.mod's Go"},
		{"-o /out/runner", "-o /out/runner-bin", "does not write /out/runner"},
		{"CGO_ENABLED=0 go build", "go build", "CGO on"},
		{"sysinfo.Commit=${COMMIT}", "sysinfo.Revision=${COMMIT}", "no package-level string variable Revision"},
		{"ARG COMMIT=", "ARG REVISION=", "from an ARG COMMIT"},
		{"Version=${VERSION}", "Version=v1.0.0", "want ${VERSION}"},
	} {
		bad := strings.Replace(string(src), m.from, m.to, 1)
		if bad == string(src) {
			t.Fatalf("Dockerfile has no %q to change", m.from)
		}
		ps := checkDockerfile(t, []byte(bad))
		if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, m.want) }) {
			t.Errorf("%q → %q: found %q, nothing about %q", m.from, m.to, ps, m.want)
		}
	}
}

// readmeSection returns README's section "runner in CI".
func readmeSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## runner in CI\n")
	if !ok {
		t.Fatal("README has no section \"runner in CI\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

// readmeCommands returns the words of the command lines of README "runner
// in CI"'s sh blocks that run prog, a command substitution $(…) taken
// as one word.
func readmeCommands(t *testing.T, prog string) [][]string {
	t.Helper()
	var cmds [][]string
	for _, block := range strings.Split(readmeSection(t), "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		for _, line := range strings.Split(block, "\n") {
			line, _, _ = strings.Cut(line, " #")
			line = regexp.MustCompile(`\$\([^)]*\)`).ReplaceAllString(line, "SUBST")
			w, err := shellwords.Parse(line)
			if err != nil {
				t.Fatalf("README: %q: %v", line, err)
			}
			if len(w) > 1 && w[0] == prog {
				cmds = append(cmds, w)
			}
		}
	}
	return cmds
}

// TestReadmeContainer: the README's docker commands pass the build
// arguments the Dockerfile declares and mount the working directory the
// image works in.
func TestReadmeContainer(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := stages(src)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	var workdir string
	for _, s := range st {
		for _, n := range s.steps {
			switch a := args(n); n.Value {
			case "arg":
				name, _, _ := strings.Cut(a[0], "=")
				declared[name] = true
			case "workdir":
				workdir = a[0]
			}
		}
	}
	var built, ran bool
	for _, c := range readmeCommands(t, "docker") {
		switch c[1] {
		case "build":
			built = true
			for i, w := range c {
				if w == "--build-arg" && i+1 < len(c) {
					if name, _, _ := strings.Cut(c[i+1], "="); !declared[name] {
						t.Errorf("README: docker build --build-arg %s, which the Dockerfile does not declare", name)
					}
				}
			}
		case "run":
			ran = true
			i := slices.Index(c, "-v")
			if i < 0 || i+1 >= len(c) || !strings.HasSuffix(c[i+1], ":"+workdir) {
				t.Errorf("README: docker run %q does not mount a directory at the image's WORKDIR %s", c, workdir)
			}
			if !slices.Contains(c, "--user") {
				t.Errorf("README: docker run %q: no --user, so the reports would be written as 65532", c)
			}
		}
	}
	if !built || !ran {
		t.Errorf("README shows docker build: %v, docker run: %v; want both", built, ran)
	}
}

// TestReadmeRelease: the README's build.sh command sets only variables
// that the script reads.
func TestReadmeRelease(t *testing.T) {
	script, err := os.ReadFile("build.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(readmeSection(t), "\n") {
		w := strings.Fields(line)
		i := slices.Index(w, "deploy/release/build.sh")
		if i < 0 {
			continue
		}
		for _, a := range w[:i] {
			name, _, _ := strings.Cut(a, "=")
			if !bytes.Contains(script, []byte(name+"=${"+name+":-")) {
				t.Errorf("README: %s: build.sh reads no %s", line, name)
			}
		}
		return
	}
	t.Error("README \"runner in CI\" shows no deploy/release/build.sh command")
}
