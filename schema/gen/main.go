// Command gen is the schema stage's generator: it writes the JSON Schema of
// scenario files, generated from the Go types by schema.JSONSchema. `go
// generate ./schema/` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/runner-dev/runner/schema"
)

func main() {
	out := flag.String("o", "scenario.schema.json", "file to write")
	flag.Parse()
	b, err := schema.JSONSchema()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
