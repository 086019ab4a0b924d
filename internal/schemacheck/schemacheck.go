// Package schemacheck compiles runner's published JSON Schemas
// (schema/scenario.schema.json, reports/result.schema.json) with an
// independent draft 2020-12 validator, santhosh-tekuri/jsonschema, for the
// tests that hold documents to them. Only tests import it.
package schemacheck

import (
	"bytes"
	"fmt"
	"os"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile reads and compiles the schema in file, asserting its formats
// (date-time and the like, which draft 2020-12 leaves as annotations by
// default). Errors name file.
func Compile(file string) (*jsonschema.Schema, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(file, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s, err := c.Compile(file)
	if err != nil {
		return nil, fmt.Errorf("%s does not compile: %w", file, err)
	}
	return s, nil
}

// Decode decodes JSON into the values the validator takes (numbers as
// json.Number, so that an integer stays one).
func Decode(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}
