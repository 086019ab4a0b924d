//go:build unix && !aix && !linux

package http

import "syscall"

// canLook: this system can look at a socket without blocking.
const canLook = true

// peekFD copies what waits on the socket into b without taking it
// (MSG_PEEK) and without waiting (MSG_DONTWAIT: EAGAIN when empty).
func peekFD(fd uintptr, b []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), b, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}

// readFD reads once from the non-blocking socket (EAGAIN when empty).
func readFD(fd uintptr, b []byte) (int, error) {
	return syscall.Read(int(fd), b)
}
