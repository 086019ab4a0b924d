//go:build !unix || aix

package http

import "errors"

// canLook: no non-blocking look here; idle connections are reused as
// they are.
const canLook = false

func peekFD(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }

func readFD(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
