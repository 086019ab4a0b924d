//go:build unix

package regularfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ReadPrefix reads the first n bytes of the file at path (all of it when
// it is shorter). Anything but a
// regular file is refused: a named pipe would block until a writer came,
// a device such as /dev/zero would never end. The file is opened without
// blocking (O_NONBLOCK: opening a FIFO then returns at once) and its type
// is taken from the opened file (fstat), so a path swapped for a FIFO
// between a check and the open cannot block; a file that only looks
// regular but blocks on read (/proc/kmsg) fails with EAGAIN instead of
// waiting. Errors: the os error, or "not a regular file (TYPE)", each
// naming path.
func ReadPrefix(path string, n int64) ([]byte, error) {
	// The file is read with the system calls themselves: os.File would
	// take a "regular" file back into blocking mode.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, typeName(uint32(st.Mode)))
	}
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		k, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read: %w", path, err)
		}
		if k == 0 {
			return b, nil
		}
		b = append(b, buf[:k]...)
		if int64(len(b)) >= n {
			return b[:n], nil
		}
	}
}

// typeName names a file type as os.FileMode prints it.
func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "not regular"
}
