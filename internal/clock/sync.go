package clock

// Sync is the kernel's view of how well this machine's wall clock is
// disciplined (adjtimex(2), as ntpd, chrony and systemd-timesyncd set it):
// the evidence a scale-out segment records for the instant it started
// at. Two generators started "at" one instant start within the sum of
// their clocks' errors of each other.
type Sync struct {
	// Synchronised is true when a time daemon keeps the clock in sync
	// (the STA_UNSYNC status bit is clear and the clock state is not
	// TIME_ERROR).
	Synchronised bool `json:"synchronised"`
	// MaxErrorMicros is the kernel's bound on the clock's error, µs
	// (timex.maxerror: it grows by 500 µs/s while no daemon updates it).
	MaxErrorMicros int64 `json:"max_error_us"`
	// EstErrorMicros is the daemon's estimate of the error, µs
	// (timex.esterror).
	EstErrorMicros int64 `json:"est_error_us"`
	// Err says why the state could not be read ("" when it was).
	Err string `json:"error,omitempty"`
}
