//go:build unix && !aix

package relink

import "syscall"

// canPeek: this system can look at a socket without blocking.
const canPeek = true

// peekFD looks at one byte waiting on the socket without taking it
// (MSG_PEEK) and without waiting (MSG_DONTWAIT: EAGAIN when empty).
func peekFD(fd uintptr) (int, error) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
