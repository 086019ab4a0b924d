package drivers

import (
	"fmt"
	"io"
	"os"
)

// MaxFile bounds a file that a scenario names for a driver to read whole
// (a frame payload_file, a tls.ca_file): 64 MiB.
const MaxFile = 64 << 20

// ReadFile reads the file at path whole, at most max bytes. A named pipe
// or a device would block (opening a FIFO waits for a writer) or never
// end (/dev/zero), so anything but a regular file is refused before it
// is opened. Errors: the os error, "not a regular file", or a file
// larger than max bytes, each naming path.
func ReadFile(path string, max int64) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}
