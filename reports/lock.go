package reports

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// lockSuffix names an output's lock file: path + ".lock".
const lockSuffix = ".lock"

// OutputLock is an exclusive hold on an output path, taken before any
// traffic so that two runs never write the same report (the last rename
// would silently replace the other's). It is a flock(2) on path+".lock":
// the kernel releases it when the holder exits, however it exits, so a
// lock file left behind by a crash blocks nobody.
type OutputLock struct {
	f    *os.File
	path string // the lock file's
}

// HeldError is LockOutput's error when another process (or another open
// of the same path in this one) holds the lock: Path is the output,
// Holder what the holder wrote in the lock file ("" when it has not yet).
type HeldError struct {
	What, Path, Holder string
}

func (e *HeldError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "another process"
	}
	return fmt.Sprintf("%s %s: another run is writing it (%s, lock %s)", e.What, e.Path, holder, e.Path+lockSuffix)
}

// LockOutput takes the exclusive lock of output path (what, the flag's
// name, starts every error) without waiting: it creates path's directory
// and path+".lock" if need be, flocks it and writes holder (who holds it:
// process id, scenario, run ID) into it for whoever is refused. A lock
// held elsewhere is a *HeldError naming path and that holder; any other
// failure is an error naming path. Release gives it back.
func LockOutput(what, path, holder string) (*OutputLock, error) {
	lp := path + lockSuffix
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, pathless(err))
	}
	// A releaser removes the lock file while holding it: a lock taken on
	// the removed file is nobody's, so retry on the file now at lp. Each
	// retry follows someone else's release; a few suffice.
	for range 8 {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s %s: lock %s: %w", what, path, lp, pathless(err))
		}
		if held, err := tryLock(f); err != nil {
			b, _ := io.ReadAll(io.LimitReader(f, 1024))
			f.Close()
			if held {
				return nil, &HeldError{What: what, Path: path, Holder: strings.TrimSpace(string(b))}
			}
			return nil, fmt.Errorf("%s %s: lock %s: %w", what, path, lp, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(lp)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(holder+"\n"), 0)
		}
		return &OutputLock{f: f, path: lp}, nil
	}
	return nil, fmt.Errorf("%s %s: lock %s: released and re-taken by others 8 times in a row; try again", what, path, lp)
}

// Release removes the lock file and gives the lock back. A nil lock, or
// one released already, is a no-op.
func (l *OutputLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path) // while held: nobody else can be holding this file
	l.f.Close()
	l.f = nil
}
