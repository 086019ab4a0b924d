package reports

import (
	"errors"
	"testing"
)

// countingWriter counts the writes it is given and their bytes; after
// failAfter writes (when > 0) it fails every write.
type countingWriter struct {
	writes, bytes, failAfter int
}

var errWriteFailed = errors.New("write failed")

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	if c.failAfter > 0 && c.writes > c.failAfter {
		return 0, errWriteFailed
	}
	c.bytes += len(p)
	return len(p), nil
}

// The HTML writer handed its writer every small piece the template made:
// a report of 3,000 phases took 957,313 write system calls. It is
// buffered now: a page of n bytes is about ⌈n / 64 KiB⌉ writes (bufio
// flushes before a piece larger than what is left of its buffer, then
// writes that piece straight through: two more allowed), and a failing
// writer's error is returned.
func TestHTMLWritesAreBuffered(t *testing.T) {
	var c countingWriter
	if err := HTML(&c, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if most := (c.bytes+64<<10-1)/(64<<10) + 2; c.writes > most || c.bytes < 64<<10 {
		t.Errorf("%d writes of %d bytes in all, want at most %d (64 KiB each) of a page above 64 KiB", c.writes, c.bytes, most)
	}
	failing := countingWriter{failAfter: 1}
	if err := HTML(&failing, fixture(t)); !errors.Is(err, errWriteFailed) {
		t.Errorf("a writer that fails after one write: %v, want its error", err)
	}
}
