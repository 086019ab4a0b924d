// Command schemagen writes runner's published JSON Schemas, generated
// from the Go types: the scenario file's (schema/scenario.schema.json,
// `go generate ./schema/`) and the JSON result document's
// (reports/result.schema.json, `go generate ./reports/`). It is a command
// of its own so that the runner binary links neither
// github.com/invopop/jsonschema nor the YAML library it brings; a test
// here regenerates both schemas and fails when a checked-in one drifts.
//
// Usage:
//
//	schemagen scenario|result -o FILE
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// generators are the schemas schemagen writes, by the name its first
// argument gives.
var generators = map[string]func(root string) ([]byte, error){
	"scenario": Scenario,
	"result":   Result,
}

// run generates the schema args name into the file of its -o flag.
func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: schemagen scenario|result -o FILE")
	}
	gen, ok := generators[args[0]]
	if !ok {
		return fmt.Errorf("unknown schema %q; want scenario or result", args[0])
	}
	fs := flag.NewFlagSet("schemagen "+args[0], flag.ContinueOnError)
	out := fs.String("o", "", "file to write")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: schemagen %s -o FILE", args[0])
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	b, err := gen(root)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}
