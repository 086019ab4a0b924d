//go:build !linux

package reports

// nameMax is 255, the longest file name in bytes: this system's file
// systems (APFS and HFS+ on macOS, NTFS on Windows) take 255 characters,
// which is at least 255 bytes, and there is no statfs field to read here.
// A name that passes this check may still be refused by the file system,
// then at write time with the system's own error.
func nameMax(dir string) int { return 255 }
