package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	httpdriver "github.com/runner-dev/runner/drivers/http"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// placeholderURL stands in for a reference target's address, which is
// known only once it is spawned, so that validation never needs a target.
const placeholderURL = "http://127.0.0.1:1"

// compile loads, validates and compiles one scenario file without sending
// anything. Every problem of the file is in the returned error.
func compile(file string) (*schema.Scenario, *engine.Plan, error) {
	sc, err := schema.LoadWith(file, schema.Options{CheckRule: func(src string) error {
		_, err := rules.Compile(src)
		return err
	}})
	if err != nil {
		return nil, nil, err
	}
	base := sc.Target.URL
	if base == "" {
		base = placeholderURL
	}
	var errs []error
	lim := engine.Limits{MaxInflight: 1}
	switch {
	case sc.Driver.HTTP != nil:
		d, err := httpdriver.New(*sc.Driver.HTTP, base)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: driver.http: %w", file, err))
		} else {
			lim.MaxInflight = d.MaxInflight()
		}
		lim.Timeout = time.Duration(sc.Driver.HTTP.Timeout)
	}
	pl, err := engine.Compile(sc, lim)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return sc, nil, err
	}
	return sc, pl, nil
}

// printErrors writes each problem on its own line.
func printErrors(w io.Writer, err error) {
	for _, e := range flatten(err) {
		fmt.Fprintln(w, e)
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
