//go:build windows

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// sysSignalName names the two signals Windows delivers to a Go program
// (os.Interrupt for Ctrl-C or Ctrl-Break, SIGTERM for a closed console or
// a shutdown), or "" for any other.
func sysSignalName(n syscall.Signal) string {
	switch n {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return ""
}

// termiosErr is nil when f is a console (it has a console mode): the live
// progress line is rewritten in place only there.
func termiosErr(f *os.File) error {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode)
}
