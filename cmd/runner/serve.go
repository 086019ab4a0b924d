package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/suggest"
	"github.com/runner-dev/runner/targets"
	"github.com/runner-dev/runner/targets/frametarget"
	"github.com/runner-dev/runner/targets/httptarget"
	"github.com/runner-dev/runner/targets/wsgateway"
)

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	// registered keeps the kinds in the order they are added (http first);
	// cobra's Commands() sorts them by name.
	var registered []*cobra.Command
	var serve *cobra.Command
	add := func(c *cobra.Command) {
		serve.AddCommand(c)
		registered = append(registered, c)
	}
	serve = &cobra.Command{
		Use:   "serve KIND [flags]",
		Short: "Run a reference target with known behaviour (kinds: http, ws-gateway, frame)",
		Long: `serve runs a reference target: a server whose behaviour is known exactly, so
that measured numbers can be checked against analytical ones. Scenarios with
target: {serve: KIND, args: [...]} spawn it as a separate child process on a
free loopback port; you can also run it by hand and point target.url at it.
It prints "listening on URL" once ready and stops on SIGINT/SIGTERM.`,
		// A kind that is not a subcommand lands here: a usage error, not
		// the help text with exit 0.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var kinds []string
			for _, k := range registered {
				if k.IsAvailableCommand() {
					kinds = append(kinds, k.Name())
				}
			}
			if len(args) == 0 {
				fmt.Fprintf(stderr, "runner serve: no reference target kind given; kinds: %s\n", strings.Join(kinds, ", "))
			} else {
				hint := ""
				if near := suggest.Nearest(args[0], kinds, suggest.Limit(args[0])); len(near) > 0 {
					hint = fmt.Sprintf(" (did you mean %q?)", near[0])
				}
				fmt.Fprintf(stderr, "runner serve: unknown reference target kind %q%s; kinds: %s\n", args[0], hint, strings.Join(kinds, ", "))
			}
			return exitError(exitInvalid)
		},
	}
	add(kind(stdout, stderr, "http [--listen ADDR] [--delay D] [--workers 1] [--stall-every P --stall-for D] [--slow-for D --slow-delay D] [--delay-per-seq D] [--delay-path PATH=D,...] [--error-every N] [--error-status S] [--close-after N] [--reset-after-conns K] [--users FILE] [--max-sessions N]",
		"HTTP/1.1 reference target: GET /healthz, GET /stats (JSON counters), a shop for flows (/login, /items, /items/{id}, /logout), every other path counted",
		`The http reference target answers every request except /healthz and /stats
with 200 "ok" after a fixed delay; its knobs make it misbehave in known ways.
Its shop, for HTTP flows, answers POST /login (JSON or form user, password;
users from --users FILE, else password pw-USER) with a bearer token and a
session cookie, which GET /items, GET /items/{id} and POST /logout require.
GET /stats returns its counters as a flat JSON object (requests, ok,
status_NNN, connections, login, login_200, items_401, item_404, ...), which
reconcile.fetch reads.`,
		"http", httptarget.ParseArgs, httptarget.Usage, httptarget.Serve))
	add(kind(stdout, stderr, "ws-gateway [--listen ADDR] [--bucket N] [--refill R] [--service D] [--jitter D] [--seed S] [--serial-service D] [--close-after N [--close-abrupt]] [--never-answer] [--reorder K] [--duplicate-every N] [--unknown-id-every N] [--slow-every N --slow-delay D]",
		"WebSocket reference target: a message gateway with a per-connection token bucket, /serial mode, GET /healthz and GET /stats",
		`The ws-gateway reference target is a synthetic WebSocket message gateway.
Every path but /healthz and /stats is a WebSocket; /serial serves one message
at a time per connection. Each JSON message {"id":...} gets {"id":...,"ok":true}
after its service time, or {"id":...,"ok":false,"code":"RATE_LIMITED"} at once
when the connection's token bucket is empty; {"cmd":"stats"} and GET /stats
return its counters (messages, ok, limited, replies, connections, ...) as a
flat JSON object. Its truth knobs make it misbehave in known ways.`,
		"ws", wsgateway.ParseArgs, wsgateway.Usage, wsgateway.Serve))
	add(kind(stdout, stderr, "frame [--listen ADDR] [--handler echo|digest] [--rounds N] [--workers N] [--delay D] [--reorder K] [--malformed-every N --malformed KIND] [--close-after N | --cut-after N]",
		"Binary-frame (LKDF over TCP) reference target: echo or SHA-256 digest on N event loops; GET /healthz and GET /stats on the same port",
		`The frame reference target speaks LKDF over TCP: 16-byte big-endian headers
(magic "LKDF", version 1, type 1 request / 2 response, flags, requestId,
payload length up to 1 MiB) and a payload. Each request frame gets one response
frame with its flags and requestId, carrying the request's payload (--handler
echo) or --rounds rounds of SHA-256 of it (--handler digest), computed on one of
--workers event loops; each connection is bound to one loop. A connection
starting with "GET " or "HEAD" is HTTP instead: GET /healthz, and GET /stats for
the counters (requests, responses, bad_frames, connections, ...) as a flat JSON
object. Its truth knobs make it misbehave in known ways.`,
		"tcp", frametarget.ParseArgs, frametarget.Usage, frametarget.Serve))
	return serve
}

// kind is the command of one reference target (use starts with its name):
// it parses its own flags (DisableFlagParsing), so that `target.args` in a
// scenario and this command line take exactly the same words; -h or
// --help prints long, the usage line and the target's flags; once ready
// it prints targets.ReadyPrefix and its URL (scheme://addr) and serves
// until SIGINT or SIGTERM. Bad flags exit 2; a failure to serve exits 3.
func kind[C any](stdout, stderr io.Writer, use, short, long, scheme string,
	parse func([]string) (C, error), usage func() string,
	serve func(context.Context, C, func(addr string)) error) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{
		Use:                use,
		Short:              short,
		Long:               long,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "-h" || a == "--help" {
					fmt.Fprintln(stdout, cmd.Long+"\n\nUsage: runner "+cmd.Parent().Name()+" "+cmd.Use)
					fmt.Fprintln(stdout, usage())
					return nil
				}
			}
			cfg, err := parse(args)
			if err != nil {
				fmt.Fprintf(stderr, "runner serve %s: %v\n", name, err)
				return exitError(exitInvalid)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			err = serve(ctx, cfg, func(addr string) {
				fmt.Fprintf(stdout, "%s%s://%s\n", targets.ReadyPrefix, scheme, addr)
			})
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "runner serve %s: %v\n", name, err)
				return exitError(exitCouldNotRun)
			}
			return nil
		},
	}
}
