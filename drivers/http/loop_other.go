//go:build !linux

package http

import (
	"context"
	"errors"

	"github.com/runner-dev/runner/drivers"
)

// loopOS: the event loop runs on Linux only.
const loopOS = false

// RunClosed implements drivers.Looper: never here (CanLoop says why).
func (d *Driver) RunClosed(_ context.Context, _ <-chan struct{}, conns []drivers.Conn, _ int, _ drivers.LoopHooks) ([]drivers.Conn, error) {
	return conns, errors.New("no event loop: the event loop runs on Linux only")
}

// RunOpen implements drivers.Looper: never here (CanLoop says why).
func (d *Driver) RunOpen(_ context.Context, _ <-chan struct{}, conns []drivers.Conn, _ drivers.OpenHooks) ([]drivers.Conn, error) {
	return conns, errors.New("no event loop: the event loop runs on Linux only")
}
