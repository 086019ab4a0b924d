//go:build darwin

package reports

import "golang.org/x/sys/unix"

// pathMax is the kernel's limit on a path, in bytes with its NUL.
const pathMax = unix.PathMax
