//go:build windows

package reports

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows locks byte ranges (LockFileEx), and its locks are mandatory:
// a locked range cannot be read by anyone else. The lock is therefore
// taken on one byte far past any content (offset 2^62), so that the
// holder line of a lock file and the rows of a TSV stay readable. Like
// flock, the lock ends when its holder's handle closes, however the
// holder exits. Release cannot remove a lock file that is open, so on
// Windows a released lock file stays on disk (empty of a holder only when
// overwritten by the next); it blocks nobody.
const lockHigh = 1 << 30 // OffsetHigh: 2^62

func lockEx(f *os.File, flags uint32) error {
	ol := windows.Overlapped{OffsetHigh: lockHigh}
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|flags, 0, 1, 0, &ol)
}

// tryLock takes f's exclusive lock without waiting; held is true when
// someone else holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = lockEx(f, windows.LOCKFILE_FAIL_IMMEDIATELY)
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// lockWait takes f's exclusive lock, waiting for it.
func lockWait(f *os.File) error { return lockEx(f, 0) }

// unlock gives f's lock back.
func unlock(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
