package main

import (
	"os/exec"
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
		"bench", "cmd", "docs", "drivers", "engine", "internal", "reports", "scenarios", "schema", "targets"}
	seen := map[string]bool{}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, _, _ := strings.Cut(f, "/")
		if !slices.Contains(layout, top) && !seen[top] {
			seen[top] = true
			t.Errorf("%s is tracked at the repository's top level, which holds only %v: a leftover? (add it to the README's Layout and here if it belongs)", top, layout)
		}
	}
}
