//go:build windows

package regularfile

import (
	"fmt"
	"io"
	"os"
)

// ReadPrefix reads the first n bytes of the file at path (all of it when
// it is shorter). Anything but a regular file is refused. Windows has no
// non-blocking open, so the path is first checked with os.Lstat (a
// symbolic link is followed with os.Stat), then opened normally, and the
// open handle's type is checked again before any read: a path swapped
// between the check and the open is still refused, but the open itself
// could wait on whatever the path then names (a small race the Unix
// version closes with O_NONBLOCK). Errors: the os error, or "not a regular
// file (TYPE)", each naming path.
func ReadPrefix(path string, n int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		if fi, err = os.Stat(path); err != nil {
			return nil, err
		}
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, modeName(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, modeName(fi.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", path, err)
	}
	return b, nil
}

// modeName names a file type in the words typeName uses on Unix.
func modeName(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "not regular"
}
