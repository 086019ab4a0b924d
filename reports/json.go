package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteJSON writes the run as indented JSON to path atomically: to a
// temporary file in the same directory, synced, then renamed over path, so
// a reader never sees a truncated report, even if the runner is killed.
// The file is created with mode 0644, as the TSV. Secret values (from
// ${ENV}) are redacted. It refuses to replace anything but a regular file
// (a directory, a device such as /dev/full, a pipe): renaming over it
// would destroy it. Every error names path.
func WriteJSON(path string, r *Run) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // rules read `p99 < 20ms`, not `p99 \u003c 20ms`
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("json %s: encode report: %w", path, err)
	}
	b := r.Redactor().Bytes(buf.Bytes())
	return writeAtomic(path, b)
}

// CheckJSON tells, before any traffic, whether WriteJSON could write
// path: it is not an existing directory or other non-regular file, and
// its directory could be made (if need be) and take a new file. It
// creates nothing. Every error names path.
func CheckJSON(path string) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	return checkDir(path, "json")
}

// checkTarget refuses a path that exists and is not a regular file
// (after symbolic links).
func checkTarget(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("json %s: %w", path, pathless(err))
	case st.IsDir():
		return fmt.Errorf("json %s: is a directory", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("json %s: is %s, not a regular file; refusing to replace it", path, fileKind(st.Mode()))
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

// checkDir proves that path's directory can be made and take a new file,
// without making it: it finds the nearest existing directory on the way
// (path's own, or the ancestor MkdirAll would start from), creates a
// temporary file there and removes it. what ("tsv", "json") starts the
// error, which names path.
func checkDir(path, what string) error {
	dir := filepath.Dir(path)
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
		dir = parent
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
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("json %s: %w", path, pathless(err))
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
