//go:build windows

package reports

// pathMax is the limit of an extended-length path (Go adds the \\?\
// prefix to long paths itself), in UTF-16 units with the NUL; a path's
// bytes are at least as many, so the check never refuses a path Windows
// would take.
const pathMax = 32767
