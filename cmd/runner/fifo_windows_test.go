//go:build windows

package main

import "errors"

// mkfifo fails: Windows has no named pipes in the file system.
func mkfifo(path string, mode uint32) error { return errors.New("no FIFOs on Windows") }
