//go:build linux

package clock

import (
	"context"
	"math"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PreciseSleeper sleeps on a Linux timerfd armed at an absolute
// CLOCK_MONOTONIC instant (the clock Go's monotonic readings come from),
// read through the runtime's poller, so a wait ends within microseconds of
// its instant without spinning. Waits under spinBelow (10 µs) yield in a
// loop.
type PreciseSleeper struct {
	f       *os.File
	fd      int
	watched <-chan struct{} // the done channel a goroutine watches
}

// NewPrecise returns a PreciseSleeper, or a TimerSleeper where a
// timerfd cannot be made. Every done channel passed to Until must be
// closed eventually: a goroutine waits on it.
func NewPrecise() Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return TimerSleeper{}
	}
	return &PreciseSleeper{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
}

// Until implements Sleeper.
func (s *PreciseSleeper) Until(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	if d < spinBelow {
		for time.Until(t) > 0 {
			select {
			case <-done:
				return false
			default:
			}
			runtime.Gosched()
		}
		return true
	}
	p, ok := monoBase()
	if !ok {
		return For(time.Until(t), done)
	}
	at := p.mono + t.Sub(p.base)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(at))}
	if unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &spec, nil) != nil {
		return For(time.Until(t), done)
	}
	s.watch(done)
	var buf [8]byte
	if _, err := s.f.Read(buf[:]); err != nil {
		select {
		case <-done:
			return false
		default:
		}
		// Any other read error: fall back to a plain timer.
		return For(time.Until(t), done)
	}
	// The timer fired at its CLOCK_MONOTONIC instant; should the two
	// clocks' readings differ by a hair, never return early.
	for time.Until(t) > 0 {
		runtime.Gosched()
	}
	return true
}

// monoBase pairs a reading of Go's clock with the CLOCK_MONOTONIC instant
// it was taken at, once per process: Until turns an instant t into the
// timerfd's absolute CLOCK_MONOTONIC time as mono + t.Sub(base), where a
// clock_gettime per wait would be a real system call (x/sys/unix does not
// go through the vDSO), one per arrival. Both readings come from the same
// clock (Go's monotonic readings are CLOCK_MONOTONIC), so the pair does not
// drift; of three tries the one whose two Go readings lie closest is kept,
// and base is their midpoint, within a microsecond or so of mono. A timer
// that fires that much early is waited out in Until; ok is false where the
// clock cannot be read.
var monoBase = sync.OnceValues(func() (monoPair, bool) {
	var p monoPair
	ok := false
	best := time.Duration(math.MaxInt64)
	for range 3 {
		var ts unix.Timespec
		t0 := time.Now()
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
			return monoPair{}, false
		}
		t1 := time.Now()
		if d := t1.Sub(t0); d < best {
			best = d
			p, ok = monoPair{t0.Add(d / 2), time.Duration(ts.Nano())}, true
		}
	}
	return p, ok
})

// monoPair is a reading of Go's clock (base) and the CLOCK_MONOTONIC
// instant it stands for (mono, since the clock's origin).
type monoPair struct {
	base time.Time
	mono time.Duration
}

// watch makes a close of done wake any read of the timerfd, by moving its
// read deadline into the past. One goroutine per done channel, not per
// wait: the pacer waits on the same channel for a whole phase.
func (s *PreciseSleeper) watch(done <-chan struct{}) {
	if done == nil || done == s.watched {
		return
	}
	s.watched = done
	s.f.SetReadDeadline(time.Time{})
	f := s.f
	go func() {
		<-done
		f.SetReadDeadline(time.Unix(1, 0))
	}()
}

// Close implements Sleeper.
func (s *PreciseSleeper) Close() error { return s.f.Close() }

// isPrecise reports whether s is the timerfd sleeper.
func isPrecise(s Sleeper) bool {
	_, ok := s.(*PreciseSleeper)
	return ok
}

// Sleep waits d, precisely where a timerfd can be made, or until ctx is
// done; it reports whether d passed. It never returns true early. Each
// call makes and releases its own timer, so it is safe for concurrent use
// (one per request of a server, say).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	end := time.Now().Add(d)
	s := NewPrecise()
	defer s.Close()
	p, ok := s.(*PreciseSleeper)
	if !ok {
		return For(d, ctx.Done())
	}
	// A cancellation wakes the read by moving its deadline into the past;
	// AfterFunc, not a watching goroutine, so nothing outlives the call.
	stop := context.AfterFunc(ctx, func() { p.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	p.watched = ctx.Done() // the AfterFunc above does the watching
	return p.Until(end, ctx.Done())
}
