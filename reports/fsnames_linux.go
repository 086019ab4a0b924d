//go:build linux

package reports

import "golang.org/x/sys/unix"

// pathMax is the kernel's limit on a path, in bytes with its NUL.
const pathMax = unix.PathMax

// nameMax is the longest file name, in bytes, the file system holding
// dir accepts (255 when it cannot be read).
func nameMax(dir string) int {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Namelen <= 0 {
		return 255
	}
	return int(st.Namelen)
}
