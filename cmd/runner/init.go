package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// starterFS holds one commented starter scenario per driver, each aimed
// at the matching built-in reference target so that it runs as written.
//
//go:embed starters/*.yaml
var starterFS embed.FS

// starterDrivers lists the drivers `runner init` knows, in the order help
// and error messages show them, with the reference target each starter
// spawns.
var starterDrivers = []struct{ name, serve string }{
	{"http", "http"},
	{"http-flow", "http"},
	{"websocket", "ws-gateway"},
	{"frame", "frame"},
}

// defaultInitFile is where `runner init` writes without a FILE argument;
// the starters' how-to-run comments name it and are rewritten to name
// the actual file.
const defaultInitFile = "scenario.yaml"

func starterNames() string {
	names := make([]string, len(starterDrivers))
	for i, d := range starterDrivers {
		names[i] = d.name
	}
	return strings.Join(names, ", ")
}

// starter returns the starter scenario of a driver and the reference
// target it spawns.
func starter(driver string) (text []byte, serve string, ok bool) {
	for _, d := range starterDrivers {
		if d.name == driver {
			b, err := starterFS.ReadFile("starters/" + d.name + ".yaml")
			if err != nil {
				panic(err) // embedded at build time; a missing file is a build bug
			}
			return b, d.serve, true
		}
	}
	return nil, "", false
}

func newInitCmd(stdout, stderr io.Writer) *cobra.Command {
	var driver string
	var force bool
	cmd := &cobra.Command{
		Use:   "init [--driver " + strings.ReplaceAll(starterNames(), ", ", "|") + "] [--force] [FILE]",
		Short: "Write a commented starter scenario to FILE (default scenario.yaml; - for stdout)",
		Long: `init writes a starter scenario for one driver (http, the default;
http-flow, a log in → list → open flow of the http driver; websocket; frame)
to FILE, scenario.yaml unless given, or to stdout when FILE is -. The starter
runs as written against the matching built-in reference target (serve: http
for http and http-flow, ws-gateway for websocket, frame for frame): a warmup
phase, an open-model phase, three
repeats, a reconcile block, rules on p99, errors, left-over arrivals and the
achieved rate, and TSV, JSON and Markdown outputs; every key carries a comment
with its meaning and the main alternatives (url targets, closed model, ramps,
units). Its first line is the yaml-language-server modeline of the JSON Schema.

An existing FILE is never overwritten without --force (exit 2).`,
		Example: `  runner init                            # scenario.yaml, http driver
  runner init --driver http-flow flow.yaml  # a flow of steps, http driver
  runner init --driver websocket ws.yaml
  runner init --driver frame - | less`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, serve, ok := starter(driver)
			if !ok {
				fmt.Fprintf(stderr, "runner init: unknown driver %q; drivers: %s\n", driver, starterNames())
				return exitError(exitInvalid)
			}
			file := defaultInitFile
			if len(args) == 1 {
				file = args[0]
			}
			if file == "" {
				fmt.Fprintln(stderr, "runner init: empty FILE; give a path, or - for stdout")
				return exitError(exitInvalid)
			}
			if file == "-" {
				if _, err := stdout.Write(text); err != nil {
					fmt.Fprintf(stderr, "runner init: writing to stdout: %v\n", err)
					return exitError(exitCouldNotRun)
				}
				return nil
			}
			if file != defaultInitFile {
				text = []byte(strings.ReplaceAll(string(text), " "+defaultInitFile, " "+shellWord(file)))
			}
			if err := writeStarter(file, text, force); err != nil {
				if errors.Is(err, fs.ErrExist) {
					fmt.Fprintf(stderr, "runner init: %s already exists; not overwritten (use --force to replace it, or give another FILE, or - for stdout)\n", file)
					return exitError(exitInvalid)
				}
				fmt.Fprintf(stderr, "runner init: %v\n", err)
				return exitError(exitCouldNotRun)
			}
			f := shellWord(file)
			fmt.Fprintf(stderr, "wrote %s: the %s starter scenario, against the reference target `runner serve %s`\n", file, driver, serve)
			fmt.Fprintf(stderr, "next:  runner run %s      (check it first: runner validate %s; see the load: runner plan %s)\n", f, f, f)
			return nil
		},
	}
	cmd.Flags().StringVar(&driver, "driver", "http", "the protocol of the starter: "+starterNames())
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	_ = cmd.RegisterFlagCompletionFunc("driver", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := make([]string, len(starterDrivers))
		for i, d := range starterDrivers {
			names[i] = d.name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// writeStarter writes text to file: with force it replaces any existing
// file; without, it creates the file exclusively, so an existing one
// (even one created a moment ago) is left alone and fs.ErrExist returned.
func writeStarter(file string, text []byte, force bool) error {
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(file, flag, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shellWord quotes a path for a command line shown to the user when it
// holds anything but the characters a shell leaves alone.
func shellWord(s string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+,:@%=", r)
	}
	for _, r := range s {
		if !safe(r) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
