package httptarget

import (
	"context"
	"math"
	nethttp "net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// delay is how long the counted request r waits before it is answered:
// SlowDelay if it arrived within SlowFor of the start, else Delay; plus
// n × DelayPerSeq when the last segment of its path is the integer n.
// The arrival is read here, before any waiting, so a request that arrives
// at 4.99 s of a 5 s slow start is slow even though it ends after 5 s.
func (t *target) delay(r *nethttp.Request) time.Duration {
	d := t.cfg.Delay
	if t.cfg.SlowFor > 0 && time.Since(t.start) < t.cfg.SlowFor {
		d = t.cfg.SlowDelay
	}
	if per := t.cfg.DelayPerSeq; per > 0 {
		last := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		if n, err := strconv.ParseUint(last, 10, 63); err == nil {
			if extra := time.Duration(n) * per; n == 0 || extra/per == time.Duration(n) && d+extra >= d {
				d += extra
			} else {
				d = math.MaxInt64 // overflow: wait until the client gives up
			}
		}
	}
	return d
}

// wait blocks for d or until ctx is done. It sleeps on a Linux timerfd
// read through the runtime's poller, so it ends within microseconds of d:
// a Go timer can wake up to a millisecond late where the runtime has
// nothing else to do (the poller's timeout is in whole milliseconds),
// which would make a "fixed" delay of d anything from d to d + 1 ms, and
// the truth tests need it exact (field case B19 spaces delays 4 ms apart).
// Where no timerfd can be made it falls back to a Go timer. It never
// returns before d has passed unless ctx is done.
func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(d)
	if fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err == nil {
		f := os.NewFile(uintptr(fd), "timerfd")
		defer f.Close()
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
		if unix.TimerfdSettime(fd, 0, &spec, nil) == nil {
			// A cancelled request's wait ends at once: its read deadline
			// moves into the past.
			stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
			var buf [8]byte
			f.Read(buf[:])
			stop()
		}
	}
	// Fallback, and a guard should the timerfd's clock and Go's
	// monotonic readings differ by a hair.
	if rest := time.Until(end); rest > 0 && ctx.Err() == nil {
		timer := time.NewTimer(rest)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
	}
}
