//go:build unix && !linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// termiosErr is nil when f is a terminal (it has terminal attributes;
// TIOCGETA is the BSDs' and macOS's TCGETS).
func termiosErr(f *os.File) error {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TIOCGETA)
	return err
}
