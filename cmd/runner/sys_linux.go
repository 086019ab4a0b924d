//go:build linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// termiosErr is nil when f is a terminal (it has terminal attributes).
func termiosErr(f *os.File) error {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err
}
