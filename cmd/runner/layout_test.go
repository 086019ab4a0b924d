package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepositoryRootHoldsOnlyTheLayout: the repository's top level holds
// what the README's Layout names and nothing else, so that debug
// leftovers (a b.err, an rc.txt written by a shell redirect) cannot be
// committed unnoticed. It reads the files git tracks; without git (an
// unpacked archive) it skips.
func TestRepositoryRootHoldsOnlyTheLayout(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	if err != nil {
		t.Skip("git ls-files:", err)
	}
	layout := []string{".ci", ".gitignore", "README.md", "go.mod", "go.sum",
		"action.yml", "Dockerfile", ".dockerignore", ".goreleaser.yaml", // README "runner in CI"
		"bench", "cmd", "deploy", "docs", "drivers", "engine", "internal", "reports", "scenarios", "schema", "targets"}
	seen := map[string]bool{}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, _, _ := strings.Cut(f, "/")
		if !slices.Contains(layout, top) && !seen[top] {
			seen[top] = true
			t.Errorf("%s is tracked at the repository's top level, which holds only %v: a leftover? (add it to the README's Layout and here if it belongs)", top, layout)
		}
	}
}

// TestReadmeLayoutNamesEveryPackage: the README's Layout lists every Go
// package of the repository on a line of its own (its directory first),
// and every directory it lists exists, so that a newcomer finds each
// package's room from the README and a package moved or added without a
// line there fails here.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	_, block, _ := strings.Cut(rest, "```\n")
	block, _, _ = strings.Cut(block, "```")
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		dir := strings.TrimSuffix(strings.Fields(line)[0], "/")
		if listed[dir] {
			t.Errorf("Layout lists %s twice", dir)
		}
		listed[dir] = true
		if st, err := os.Stat(filepath.Join("../..", dir)); err != nil || !st.IsDir() {
			t.Errorf("Layout lists %s, which is not a directory of the repository", dir)
		}
	}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel("../..", filepath.Dir(path))
		if !listed[filepath.ToSlash(dir)] {
			listed[filepath.ToSlash(dir)] = true // once per package
			t.Errorf("package %s has no line of its own in the README's Layout", dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
