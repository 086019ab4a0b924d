package clock

import (
	"slices"
	"time"
)

// Resolution is how late this machine's sleeps wake up, measured once per
// run: a rate or a delay finer than the overshoot cannot be kept.
type Resolution struct {
	// Sleep is the length of each measured sleep and Samples how many
	// were taken on each clock.
	Sleep   time.Duration `json:"sleep"`
	Samples int           `json:"samples"`
	// Timer is the median overshoot of a Go timer (TimerSleeper).
	Timer time.Duration `json:"timer_overshoot"`
	// Precise is the median overshoot of the precise clock
	// (PreciseSleeper); equal to Timer's figure when PreciseAvailable is
	// false, since NewPrecise then returns a TimerSleeper.
	Precise time.Duration `json:"precise_overshoot"`
	// PreciseAvailable is false where a timerfd could not be made (and
	// always on systems other than Linux).
	PreciseAvailable bool `json:"precise_available"`
}

// Measure sleeps n times for d on a Go timer, then n times on the precise
// clock, and returns the median overshoot of each. It takes about
// 2·n·(d + overshoot).
func Measure(n int, d time.Duration) Resolution {
	r := Resolution{Sleep: d, Samples: n}
	r.Timer = overshoot(NewTimer(), n, d)
	p := NewPrecise()
	r.PreciseAvailable = isPrecise(p)
	r.Precise = overshoot(p, n, d)
	return r
}

func overshoot(s Sleeper, n int, d time.Duration) time.Duration {
	defer s.Close()
	if n <= 0 {
		return 0
	}
	done := make(chan struct{})
	defer close(done)
	over := make([]time.Duration, 0, n)
	for range n {
		t := time.Now().Add(d)
		s.Until(t, done)
		over = append(over, time.Since(t))
	}
	slices.Sort(over)
	return over[(n-1)/2]
}
