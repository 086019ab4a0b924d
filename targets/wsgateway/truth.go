package wsgateway

import (
	"flag"
	"fmt"
	"time"
)

// The truth knobs: misbehaviours whose every occurrence is known, so that
// the tests of a load generator can check it sees exactly what the
// gateway did. All are off by default and apply to both modes.
//
//   - CloseAfter N: once a connection has received its Nth message (with
//     an id) it reads no more (later messages are discarded, uncounted);
//     when the replies to all N have left, it sends Close 1000 "bye" and
//     waits up to 1 s for the client's Close (closes_sent; closes_clean if
//     the client answered), then closes the socket. With CloseAbrupt it
//     closes the socket instead, with no Close frame (closes_abrupt).
//   - NeverAnswer: every message is read and counted (messages,
//     dropped_replies) and never answered.
//   - Reorder K: a connection's replies (ok and RATE_LIMITED) are held and
//     sent K at a time, in reverse order of making; a partial batch leaves
//     50 ms after its first reply was made. BAD_REQUEST and control
//     replies are not held.
//   - DuplicateEvery N: the replies to messages are numbered across the
//     gateway as they are made (1, 2, …); reply n is sent twice when N
//     divides n (duplicates_sent).
//   - UnknownIDEvery N: after reply n, when N divides n, the frame
//     {"id":"unknown-<n>","ok":true} is sent too: an id no client sent
//     (unknown_sent). A duplicate and an extra travel with their reply,
//     also through Reorder.
//   - SlowEvery N, SlowDelay D: messages are numbered across the gateway
//     in arrival order (1, 2, …); the reply to message n waits a further D
//     when N divides n, whether ok or RATE_LIMITED. In serial mode the D
//     is part of that message's service, so the messages behind it wait
//     too (the mode stays FIFO).

// reorderFlush is how long a partial Reorder batch waits.
const reorderFlush = 50 * time.Millisecond

// truthFlags registers the truth knobs on fs.
func (cfg *Config) truthFlags(fs *flag.FlagSet) {
	fs.IntVar(&cfg.CloseAfter, "close-after", cfg.CloseAfter, "after replying to the Nth message on a connection, send Close 1000 \"bye\" and wait up to 1s for the client's Close; 0 = never")
	fs.BoolVar(&cfg.CloseAbrupt, "close-abrupt", cfg.CloseAbrupt, "with --close-after: drop the TCP connection instead, with no Close frame")
	fs.BoolVar(&cfg.NeverAnswer, "never-answer", cfg.NeverAnswer, "read and count messages but never reply")
	fs.IntVar(&cfg.Reorder, "reorder", cfg.Reorder, "send each connection's replies in batches of K, each in reverse order (a partial batch after 50ms); 0 = off, else >= 2")
	fs.IntVar(&cfg.DuplicateEvery, "duplicate-every", cfg.DuplicateEvery, "send every Nth reply (gateway-wide count) twice; 0 = never")
	fs.IntVar(&cfg.UnknownIDEvery, "unknown-id-every", cfg.UnknownIDEvery, "after every Nth reply (gateway-wide count) also send {\"id\":\"unknown-<n>\",\"ok\":true}; 0 = never")
	fs.IntVar(&cfg.SlowEvery, "slow-every", cfg.SlowEvery, "delay the reply to every Nth message (gateway-wide arrival order) by a further --slow-delay; 0 = never")
	fs.DurationVar(&cfg.SlowDelay, "slow-delay", cfg.SlowDelay, "the extra delay of --slow-every's replies (e.g. 2s)")
}

func (cfg Config) validateTruth() []error {
	var errs []error
	if cfg.CloseAfter < 0 || cfg.Reorder < 0 || cfg.DuplicateEvery < 0 || cfg.UnknownIDEvery < 0 || cfg.SlowEvery < 0 {
		errs = append(errs, fmt.Errorf("close-after %d, reorder %d, duplicate-every %d, unknown-id-every %d, slow-every %d: must not be negative",
			cfg.CloseAfter, cfg.Reorder, cfg.DuplicateEvery, cfg.UnknownIDEvery, cfg.SlowEvery))
	}
	if cfg.CloseAbrupt && cfg.CloseAfter <= 0 {
		errs = append(errs, fmt.Errorf("close-abrupt: needs --close-after N"))
	}
	if cfg.Reorder == 1 {
		errs = append(errs, fmt.Errorf("reorder 1: a batch of one is not reordered; want 0 (off) or 2 or more"))
	}
	switch {
	case cfg.SlowDelay < 0:
		errs = append(errs, fmt.Errorf("slow-delay %s: must not be negative", cfg.SlowDelay))
	case cfg.SlowEvery > 0 && cfg.SlowDelay == 0:
		errs = append(errs, fmt.Errorf("slow-every %d: needs --slow-delay D", cfg.SlowEvery))
	case cfg.SlowEvery == 0 && cfg.SlowDelay > 0:
		errs = append(errs, fmt.Errorf("slow-delay %s: needs --slow-every N", cfg.SlowDelay))
	}
	if cfg.NeverAnswer && (cfg.Reorder > 0 || cfg.DuplicateEvery > 0 || cfg.UnknownIDEvery > 0 || cfg.SlowEvery > 0) {
		errs = append(errs, fmt.Errorf("never-answer: sends no replies to reorder, duplicate, extend with unknown ids or slow down; drop those flags"))
	}
	return errs
}
