package drivers

import "github.com/runner-dev/runner/internal/regularfile"

// MaxFile bounds a file that a scenario names for a driver to read whole
// (a frame payload_file, a tls.ca_file): 64 MiB.
const MaxFile = 64 << 20

// ReadFile reads the file at path whole, at most max bytes. A named pipe
// or a device would block (opening a FIFO waits for a writer) or never
// end (/dev/zero), so anything but a regular file is refused before it
// is opened (regularfile.ReadFile). Errors: the os error, "not a regular file", or a file
// larger than max bytes, each naming path.
func ReadFile(path string, max int64) ([]byte, error) {
	return regularfile.ReadFile(path, max)
}
