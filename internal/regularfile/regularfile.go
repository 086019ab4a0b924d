// Package regularfile is a kit for the stages that read files a scenario
// names (schema, drivers): it reads such a file (the scenario itself, a
// payload, a CA bundle, a data file) whole and bounded, and only if it is
// a regular file.
//
// On Unix systems (regularfile_unix.go) the file is opened without
// blocking and its type read from the open descriptor. On Windows
// (regularfile_windows.go) it is checked with os.Lstat, opened normally,
// and checked again on the open handle.
package regularfile

import "fmt"

// ReadFile reads the file at path whole, at most max bytes: ReadPrefix,
// and an error when the file holds more. Errors: those of ReadPrefix, or
// "larger than max bytes", naming path.
func ReadFile(path string, max int64) ([]byte, error) {
	b, err := ReadPrefix(path, max+1)
	if err == nil && int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, err
}
