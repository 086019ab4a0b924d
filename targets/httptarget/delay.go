package httptarget

import (
	"context"
	"math"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/internal/clock"
)

// delay is how long the counted request r waits before it is answered:
// SlowDelay if it arrived within SlowFor of the start, else the DelayPath
// delay of its path if one matches, else Delay; plus
// n × DelayPerSeq when the last segment of its path is the integer n.
// The arrival is read here, before any waiting, so a request that arrives
// at 4.99 s of a 5 s slow start is slow even though it ends after 5 s.
func (t *target) delay(r *nethttp.Request) time.Duration {
	d := t.cfg.Delay
	if pd, ok := t.cfg.DelayPath.lookup(r.URL.Path); ok {
		d = pd
	}
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

// wait blocks for d or until ctx is done, on the precise clock: a Go timer
// can wake up to a millisecond late where the runtime has nothing else to
// do, which would make a "fixed" delay of d anything from d to d + 1 ms,
// and the truth tests need it exact (the end-to-end percentile test, B19
// in docs/design.md, "Field cases", spaces delays 4 ms apart). It never returns before d has passed unless ctx is done.
func wait(ctx context.Context, d time.Duration) { clock.Sleep(ctx, d) }
