package engine

import (
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Sleeper waits until an instant of the monotonic clock. A Sleeper is used
// by one goroutine at a time.
type Sleeper interface {
	// Until blocks until the instant t or until done is closed, whichever
	// comes first, and reports whether t was reached. It never returns
	// true before t.
	Until(t time.Time, done <-chan struct{}) bool
	// Close releases the sleeper's resources.
	Close() error
}

// TimerSleeper sleeps on a Go timer. Where the runtime has nothing else to
// do, Go timers wake up to about a millisecond late on Linux (the poller's
// timeout is in milliseconds); under testing/synctest they are exact.
type TimerSleeper struct{}

// NewTimerSleeper returns a TimerSleeper.
func NewTimerSleeper() Sleeper { return TimerSleeper{} }

// Until implements Sleeper.
func (TimerSleeper) Until(t time.Time, done <-chan struct{}) bool {
	return sleep(time.Until(t), done)
}

// Close implements Sleeper.
func (TimerSleeper) Close() error { return nil }

// spinBelow: waits shorter than this yield the processor in a loop instead
// of arming a timer, whose wake-up costs more than the wait.
const spinBelow = 50 * time.Microsecond

// PreciseSleeper sleeps on a Linux timerfd armed at an absolute
// CLOCK_MONOTONIC instant (the clock Go's monotonic readings come from),
// read through the runtime's poller, so a wait ends within microseconds of
// its instant without spinning. Waits under 50 µs yield in a loop.
type PreciseSleeper struct {
	f       *os.File
	fd      int
	watched <-chan struct{} // the done channel a goroutine watches
}

// NewPreciseSleeper returns a PreciseSleeper, or a TimerSleeper where a
// timerfd cannot be made. Every done channel passed to Until must be
// closed eventually: a goroutine waits on it.
func NewPreciseSleeper() Sleeper {
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
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		return sleep(time.Until(t), done)
	}
	at := time.Duration(now.Nano()) + time.Until(t)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(at))}
	if unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &spec, nil) != nil {
		return sleep(time.Until(t), done)
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
		return sleep(time.Until(t), done)
	}
	// The timer fired at its CLOCK_MONOTONIC instant; should the two
	// clocks' readings differ by a hair, never return early.
	for time.Until(t) > 0 {
		runtime.Gosched()
	}
	return true
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
