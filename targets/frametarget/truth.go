package frametarget

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// The truth knobs: misbehaviours whose every occurrence is known, so that
// the tests of a binary-frame load generator can check it sees exactly
// what the target did. All are off by default.
//
//   - Delay D: a reply is written D after its handler finished. The wait
//     is a timer, not the worker's: the worker goes on with its other
//     frames meanwhile (the handler's CPU work stays on the worker).
//   - Reorder K: a connection's replies are held and written K at a time,
//     in reverse order of arrival at the writer; a partial batch leaves,
//     reversed too, 50 ms after its first reply was held.
//   - MalformedEvery N, Malformed KIND: replies are numbered across the
//     target as their handler finishes (1, 2, …); reply n is replaced by
//     the fault KIND when N divides n (malformed_sent). The kinds:
//     huge-length: a response header (the request's flags and requestId)
//     with length 0x80000000, then 10 zero bytes, then silence;
//     max-length: a response header with length 0xFFFFFFFF, then silence;
//     bad-magic: the 4 bytes "GET " then the other 12 header bytes of the
//     real reply (version 1, type 2, flags, requestId, length), then
//     silence; unknown-id: a well-formed response frame with an empty
//     payload and requestId ^ 0x80000000 (an id never sent, if the client
//     keeps its ids below 2³¹), then the real reply (unknown_sent too);
//     zero-length: the real reply with an empty payload (length 0), a
//     valid frame. Silence: the target writes nothing more on the
//     connection but keeps it open, reading, counting and discarding
//     frames, until the client closes it. With Reorder, a fault travels
//     in its reply's place in the batch.
//   - CloseAfter N: once a connection's Nth reply has been written (a
//     zero-length or unknown-id reply counts, a silencing fault does not),
//     the target sends FIN (closed_by_server), drops the replies still
//     due on it, and reads and discards until the client closes (at most
//     1 s), then closes the socket.
//   - CutAfter N: once a connection's Nth reply has been written, the
//     first half of its next reply, ⌊(16 + length)/2⌋ bytes of the frame
//     (from a payload of 16 bytes or more, the whole header and part of
//     the payload), then as CloseAfter: FIN (closed_by_server and
//     cut_sent), the replies still due dropped. The cut reply is not a
//     response and carries no fault.

// The kinds of Malformed.
const (
	MalformedHugeLength = "huge-length"
	MalformedMaxLength  = "max-length"
	MalformedBadMagic   = "bad-magic"
	MalformedUnknownID  = "unknown-id"
	MalformedZeroLength = "zero-length"
)

// malformedKinds lists the kinds of Malformed, in the order of the usage.
var malformedKinds = []string{MalformedHugeLength, MalformedMaxLength, MalformedBadMagic, MalformedUnknownID, MalformedZeroLength}

// reorderFlush is how long a partial Reorder batch waits.
const reorderFlush = 50 * time.Millisecond

// truthFlags registers the truth knobs on fs.
func (cfg *Config) truthFlags(fs *flag.FlagSet) {
	fs.DurationVar(&cfg.Delay, "delay", cfg.Delay, "write each reply this long after its handler ran (e.g. 5ms), without holding up the worker; 0 = at once")
	fs.IntVar(&cfg.Reorder, "reorder", cfg.Reorder, "write each connection's replies in batches of K, each in reverse order (a partial batch after 50ms); 0 = off, else >= 2")
	fs.IntVar(&cfg.MalformedEvery, "malformed-every", cfg.MalformedEvery, "replace every Nth reply (target-wide count) by the fault --malformed; 0 = never")
	fs.StringVar(&cfg.Malformed, "malformed", cfg.Malformed, "the fault of --malformed-every: "+strings.Join(malformedKinds, ", "))
	fs.IntVar(&cfg.CloseAfter, "close-after", cfg.CloseAfter, "close each frame connection after writing its Nth reply; 0 = never")
	fs.IntVar(&cfg.CutAfter, "cut-after", cfg.CutAfter, "after a frame connection's Nth reply, write the first half of the next one, then close the connection; 0 = never")
}

func (cfg Config) validateTruth() []error {
	var errs []error
	if cfg.Delay < 0 {
		errs = append(errs, fmt.Errorf("delay %s: must not be negative", cfg.Delay))
	}
	if cfg.Reorder < 0 || cfg.MalformedEvery < 0 || cfg.CloseAfter < 0 || cfg.CutAfter < 0 {
		errs = append(errs, fmt.Errorf("reorder %d, malformed-every %d, close-after %d, cut-after %d: must not be negative", cfg.Reorder, cfg.MalformedEvery, cfg.CloseAfter, cfg.CutAfter))
	}
	if cfg.CloseAfter > 0 && cfg.CutAfter > 0 {
		errs = append(errs, fmt.Errorf("close-after %d and cut-after %d: both close the connection; give one of them", cfg.CloseAfter, cfg.CutAfter))
	}
	if cfg.Reorder == 1 {
		errs = append(errs, fmt.Errorf("reorder 1: a batch of one is not reordered; want 0 (off) or 2 or more"))
	}
	switch {
	case cfg.MalformedEvery > 0 && cfg.Malformed == "":
		errs = append(errs, fmt.Errorf("malformed-every %d: needs --malformed KIND (%s)", cfg.MalformedEvery, strings.Join(malformedKinds, ", ")))
	case cfg.MalformedEvery == 0 && cfg.Malformed != "":
		errs = append(errs, fmt.Errorf("malformed %q: needs --malformed-every N", cfg.Malformed))
	}
	if k := cfg.Malformed; k != "" && !knownKind(k) {
		errs = append(errs, fmt.Errorf("malformed %q: want one of %s", k, strings.Join(malformedKinds, ", ")))
	}
	return errs
}

func knownKind(k string) bool {
	for _, m := range malformedKinds {
		if k == m {
			return true
		}
	}
	return false
}

// silences reports whether the fault kind ends the replies on its
// connection.
func silences(kind string) bool {
	return kind == MalformedHugeLength || kind == MalformedMaxLength || kind == MalformedBadMagic
}
