//go:build unix

package reports

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes f's exclusive flock without waiting; held is true when
// someone else holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	return errors.Is(err, unix.EWOULDBLOCK), err
}

// lockWait takes f's exclusive flock, waiting for it.
func lockWait(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// unlock gives f's flock back.
func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
