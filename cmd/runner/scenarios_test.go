package main

import (
	"path/filepath"
	"testing"
)

// Every example scenario loads, validates and compiles: `validate` and
// `plan` both exit 0, sending nothing.
func TestScenariosCompile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios/*.yaml found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if code, _, stderr := cli(t, "validate", f); code != exitPass {
				t.Errorf("validate: exit %d\n%s", code, stderr)
			}
			code, stdout, stderr := cli(t, "plan", f)
			if code != exitPass {
				t.Errorf("plan: exit %d\n%s", code, stderr)
			}
			if stdout == "" {
				t.Error("plan printed nothing")
			}
		})
	}
}
