package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// WriteJSON writes the run as indented JSON to path atomically: to a
// temporary file in the same directory, synced, then renamed over path, so
// a reader never sees a truncated report, even if the runner is killed.
// The file is created with mode 0644, as the TSV. Secret values (from
// ${ENV}) are redacted. It refuses to replace anything but a regular file
// (a directory, a device such as /dev/full, a pipe): renaming over it
// would destroy it. Every error names path.
func WriteJSON(path string, r *Run) error {
	b, err := r.redactedJSON()
	if err != nil {
		return fmt.Errorf("json %s: %w", path, err)
	}
	return writeAtomic(path, b)
}

// redactedJSON is the JSON report of r in the current format
// (format_version FormatVersion, whatever r was read from), indented,
// with its secrets redacted inside its strings (redact.Redactor.JSON): a
// secret that reads like JSON syntax (true, null) leaves the document
// valid.
func (r *Run) redactedJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // rules read `p99 < 20ms`, not `p99 \u003c 20ms`
	enc.SetIndent("", "  ")
	doc := *r
	doc.FormatVersion = FormatVersion
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return r.Redactor().JSONKeeping(buf.Bytes(), structuralKeys())
}

//go:embed result.schema.json
var resultSchemaJSON []byte

// structuralKeys are the field names of the JSON report (every key of a
// "properties" object in result.schema.json): a secret equal to one
// ("response", "phases") is redacted in the report's values, never in
// its structure, which would make the saved result unreadable.
var structuralKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	var doc any
	if err := json.Unmarshal(resultSchemaJSON, &doc); err != nil {
		panic("reports: result.schema.json: " + err.Error()) // embedded at build time and tested
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for k := range props {
					keys[k] = true
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return keys
})

// Redacted returns the run as its JSON report holds it, its secrets
// redacted in every string (the scenario's and phases' names, error
// examples, headers, rules): the run every other report is rendered
// from, so that a secret that reads like report syntax (testcase, svg,
// HIST, PASS) is replaced where it is text and never where it is
// structure. r itself when it has no secret.
func (r *Run) Redacted() (*Run, error) {
	red := r.Redactor()
	if red.Empty() {
		return r, nil
	}
	b, err := r.redactedJSON()
	if err != nil {
		return nil, err
	}
	out, err := parseRun(b)
	if err != nil {
		return nil, err
	}
	out.Redact = red
	return out, nil
}

// CheckJSON tells, before any traffic, whether WriteJSON could write
// path: it is not an existing directory or other non-regular file, and
// its directory could be made (if need be) and take a new file. It
// creates nothing. Every error names path.
func CheckJSON(path string) error {
	return CheckOutput("json", path)
}

// CheckOutput tells, before any traffic, whether a report that is
// written whole (JSON, Markdown, HTML, JUnit, HDR log: through a
// temporary file renamed over path, with path's lock file beside it)
// could be written at path: it is not an existing directory or other
// non-regular file; every directory MkdirAll would make, path's own name,
// its temporary file's and its lock file's names fit the file system's
// name length limit; and the nearest existing directory takes a new
// file. It creates nothing. Every error starts with what (the flag's
// name: "json", "markdown", …) and names path.
func CheckOutput(what, path string) error {
	if err := checkTarget(what, path); err != nil {
		return err
	}
	return checkDir(path, what, wholeExtra)
}

// checkTarget refuses a path that exists and is not a regular file
// (after symbolic links); what starts the error.
func checkTarget(what, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, pathless(err))
	case st.IsDir():
		return fmt.Errorf("%s %s: is a directory", what, path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s %s: is %s, not a regular file; refusing to replace it", what, path, fileKind(st.Mode()))
	}
	return nil
}

// fileKind names what a non-regular file is, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// tempPrefix and tempSuffix frame the name of WriteJSON's temporary
// file: "." + the report's name + ".tmp-" + up to 10 random digits.
const tempPrefix, tempSuffix = ".", ".tmp-"

// wholeExtra is how many bytes the longest file made beside a report
// written whole adds to the report's own name: its temporary file's
// (tempPrefix, tempSuffix and os.CreateTemp's up to 10 digits), which is
// longer than its lock file's (lockSuffix).
const wholeExtra = len(tempPrefix) + len(tempSuffix) + 10

// checkDir proves that path's directory can be made and take a new file,
// without making it: it finds the nearest existing directory on the way
// (path's own, or the ancestor MkdirAll would start from), checks that
// every directory name still to be made, and path's name plus extra bytes
// (the longest name of a file made beside it), fit that file system's
// name length limit and the whole path fits PATH_MAX, then creates a
// temporary file there and removes it. what ("tsv", "json", …) starts the
// error, which names path.
func checkDir(path, what string, extra int) error {
	dir := filepath.Dir(path)
	var toMake []string // the directories MkdirAll would make, deepest first
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s %s: %s is not a directory", what, path, dir)
			}
			break
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return fmt.Errorf("%s %s: %w", what, path, pathless(err))
		}
		toMake = append(toMake, filepath.Base(dir))
		dir = parent
	}
	limit := nameMax(dir)
	for _, name := range toMake {
		if len(name) > limit {
			return fmt.Errorf("%s %s: the directory name %q is %d bytes, over the file system's limit of %d", what, path, name, len(name), limit)
		}
	}
	if base := filepath.Base(path); len(base)+extra > limit {
		if extra == 0 {
			return fmt.Errorf("%s %s: its name is %d bytes, over the file system's limit of %d", what, path, len(base), limit)
		}
		return fmt.Errorf("%s %s: its name is %d bytes; with the %d its temporary file adds, over the file system's limit of %d (at most %d)", what, path, len(base), extra, limit, limit-extra)
	}
	if n := len(path) + extra; n >= pathMax {
		return fmt.Errorf("%s %s: the path is %d bytes (with the %d its temporary file adds), over the limit of %d", what, path, len(path), extra, pathMax-1)
	}
	f, err := os.CreateTemp(dir, ".runner-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot create a file in %s: %w", what, path, dir, pathless(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

func writeAtomic(path string, b []byte) error {
	if err := checkTarget("json", path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("json %s: %w", path, pathless(err))
	}
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+tempSuffix+"*")
	if err != nil {
		return fmt.Errorf("json %s: cannot create a file in %s: %w", path, dir, pathless(err))
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("json %s: %w", path, pathless(err))
	}
	// CreateTemp makes the file 0600; a report is as readable as the TSV.
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("json %s: %w", path, pathless(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("json %s: %w", path, pathless(err))
	}
	return nil
}

// pathless strips the path from an *fs.PathError or *os.LinkError (the
// messages here name the output path themselves).
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
