package relink

import (
	"context"
	"errors"
)

// Gate admits one writer at a time to a link, so a message goes out
// whole, and lets a waiter give up: a wait ends with its request's
// cancellation or deadline, where a mutex would hold it past both.
type Gate chan struct{}

// NewGate returns an open Gate.
func NewGate() Gate { return make(Gate, 1) }

// Enter waits for the gate. It returns nil once in (then Leave), the
// context's error when ctx is cancelled first, and
// context.DeadlineExceeded when ctx's deadline or dl passes first.
func (g Gate) Enter(ctx context.Context, dl Deadline) error {
	select {
	case g <- struct{}{}:
		return nil
	default:
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return context.DeadlineExceeded
	case <-dl.C():
		return context.DeadlineExceeded
	}
}

// Leave lets the next writer in.
func (g Gate) Leave() { <-g }
