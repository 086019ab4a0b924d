package targets

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// flagName finds the flag a flag-package error is about.
var flagName = regexp.MustCompile(`flag -+([\w-]+)`)

// ParseFlags parses the command line of `runner serve KIND` (the words of
// `target.args`) with the flags define registers. Flags may start with -
// or --. Errors: an unknown flag, a malformed value (for a duration, with
// a reminder that it needs a unit), a positional argument.
func ParseFlags(kind string, args []string, define func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet("runner serve "+kind, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("flag -h: use runner serve %s --help", kind)
		}
		if m := flagName.FindStringSubmatch(err.Error()); m != nil && strings.Contains(err.Error(), "parse error") {
			if f := fs.Lookup(m[1]); f == nil {
				return err
			} else if g, ok := f.Value.(flag.Getter); ok {
				if _, isDur := g.Get().(time.Duration); isDur {
					// The flag package does not say what a duration looks like.
					return fmt.Errorf("%w (a duration needs a unit, e.g. 5ms)", err)
				}
			}
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// FlagUsage describes the flags define registers, one per line.
func FlagUsage(kind string, define func(*flag.FlagSet)) string {
	fs := flag.NewFlagSet("runner serve "+kind, flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	define(fs)
	fs.PrintDefaults()
	return strings.TrimRight(b.String(), "\n")
}
