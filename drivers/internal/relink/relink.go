// Package relink is what the message drivers (WebSocket, binary frames)
// share about the transport link of one driver connection: keeping it,
// re-opening it once it ends, and bounding its writes and waits.
//
// A Slot keeps the current link (a WebSocket, a TCP connection of
// frames): when the target ends it, the next request opens another, once
// for every request that finds it gone, and a released connection opens
// nothing more. A Gate admits one writer at a time, a Watch bounds the
// link's writes (cancellation, timeout) and a Deadline keeps a request's
// own deadline, none allocating per request. Peek tells, without reading,
// whether the server closed or reset a connection.
package relink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// ErrReleased is the error of a request on a released connection.
var ErrReleased = errors.New("connection released")

// Slot holds the current link of type L. Safe for concurrent use; the
// zero value is empty (the first Get opens).
type Slot[L any] struct {
	mu       sync.Mutex
	cur      *L
	dialing  chan struct{} // non-nil while a Get opens a link
	released bool
}

// Set installs l as the current link (the connection's first, opened by
// Dial). It reports false, and installs nothing, once released.
func (s *Slot[L]) Set(l *L) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return false
	}
	s.cur = l
	return true
}

// Get returns the current link, or opens one with open when there is
// none: one opener at a time, the others wait for it (or for ctx).
// opened says whether this call opened it and took how long. A link
// opened after the connection was released is closed with discard and
// ErrReleased returned; so is a Get on a released connection. open's
// error is returned as is; a wait cut by ctx returns ctx's cause.
func (s *Slot[L]) Get(ctx context.Context, open func(context.Context) (*L, error), discard func(*L)) (l *L, opened bool, took time.Duration, err error) {
	s.mu.Lock()
	for {
		switch {
		case s.released:
			s.mu.Unlock()
			return nil, false, 0, ErrReleased
		case s.cur != nil:
			l := s.cur
			s.mu.Unlock()
			return l, false, 0, nil
		case s.dialing != nil:
			wait := s.dialing
			s.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, false, 0, context.Cause(ctx)
			}
			s.mu.Lock()
			continue
		}
		s.dialing = make(chan struct{})
		s.mu.Unlock()
		t0 := time.Now()
		l, err := open(ctx)
		took := time.Since(t0)
		s.mu.Lock()
		close(s.dialing)
		s.dialing = nil
		switch {
		case err != nil:
			s.mu.Unlock()
			return nil, false, took, err
		case s.released:
			s.mu.Unlock()
			discard(l)
			return nil, false, took, ErrReleased
		}
		s.cur = l
		s.mu.Unlock()
		return l, true, took, nil
	}
}

// Current returns the current link without opening one: nil when there
// is none or the connection was released (Get then says what to do).
func (s *Slot[L]) Current() *L {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	return s.cur
}

// ErrNoLink is Alive's answer when the connection's link ended and no
// request has opened another since.
var ErrNoLink = errors.New("the connection's link ended (closed by the server) and was not re-opened")

// Alive is a drivers.Prober's Alive for a connection whose link s holds:
// ErrReleased once released, ErrNoLink when there is no current link,
// and otherwise what check says of the current one.
func (s *Slot[L]) Alive(check func(*L) error) error {
	s.mu.Lock()
	l, released := s.cur, s.released
	s.mu.Unlock()
	switch {
	case released:
		return ErrReleased
	case l == nil:
		return ErrNoLink
	}
	return check(l)
}

// Ended returns how a link ended once gone (closed when its reader
// ended) is closed, and nil while it lives; end is then the link's end.
func Ended(gone <-chan struct{}, end *drivers.Outcome) error {
	select {
	case <-gone:
		return fmt.Errorf("the link ended: %w", end.Err)
	default:
		return nil
	}
}

// Clear forgets l if it is the current link (it ended, or was dropped):
// the next Get opens another.
func (s *Slot[L]) Clear(l *L) {
	s.mu.Lock()
	if s.cur == l {
		s.cur = nil
	}
	s.mu.Unlock()
}

// Release marks the connection released and returns its current link
// (nil if none) for the caller to close; later calls return nil.
func (s *Slot[L]) Release() *L {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil
	}
	s.released = true
	l := s.cur
	s.cur = nil
	return l
}

// Released reports whether Release was called.
func (s *Slot[L]) Released() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// DialClass classifies a re-dial by Get that failed: Cancelled when the
// connection was released or ctx cancelled; otherwise Connect (the target
// was not reached), with code ETIMEDOUT when it timed out and the errno
// name (drivers.Classify) else.
func DialClass(ctx context.Context, err error) (drivers.Class, string) {
	if errors.Is(err, ErrReleased) || errors.Is(ctx.Err(), context.Canceled) {
		return drivers.Cancelled, ""
	}
	class, code := drivers.Classify(err)
	switch {
	case class == drivers.Timeout || errors.Is(err, context.DeadlineExceeded):
		return drivers.Connect, drivers.CodeConnectTimeout
	case class == drivers.Cancelled:
		return drivers.Cancelled, ""
	}
	return drivers.Connect, code
}

// Ensure is Get as a request's Do needs it: the current link at once, or
// a link re-opened with ctx bounded by dl as well. A re-open is booked in
// out (Dialed, Connect); a failed one sets out's Class and Code
// (DialClass) and Err, and is returned.
func (s *Slot[L]) Ensure(ctx context.Context, dl Deadline, open func(context.Context) (*L, error), discard func(*L), out *drivers.Outcome) (*L, error) {
	if l := s.Current(); l != nil {
		return l, nil
	}
	ctx, cancel := dl.WithDeadline(ctx)
	defer cancel()
	l, opened, took, err := s.Get(ctx, open, discard)
	if opened {
		out.Dialed++
		out.Connect = took
	}
	if err != nil {
		out.Class, out.Code = DialClass(ctx, err)
		out.Err = fmt.Errorf("re-dial: %w", err)
		return nil, err
	}
	return l, nil
}
