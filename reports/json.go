package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteJSON writes the run as indented JSON to path atomically: to a
// temporary file in the same directory, synced, then renamed over path, so
// a reader never sees a truncated report, even if the runner is killed.
// Secret values (from ${ENV}) are redacted.
func WriteJSON(path string, r *Run) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // rules read `p99 < 20ms`, not `p99 \u003c 20ms`
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b := buf.Bytes()
	if r.Scenario != nil {
		for _, sec := range r.Scenario.Secrets {
			if len(sec) < 3 {
				continue
			}
			esc, _ := json.Marshal(sec)
			b = bytes.ReplaceAll(b, esc[1:len(esc)-1], []byte("[redacted]"))
		}
	}
	return writeAtomic(path, b)
}

func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
