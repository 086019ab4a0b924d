package main

import (
	"fmt"
	"io"

	"github.com/runner-dev/runner/internal/execute"
)

// printErrors writes each problem on its own line.
func printErrors(w io.Writer, err error) {
	for _, e := range execute.Problems(err) {
		fmt.Fprintln(w, e)
	}
}
