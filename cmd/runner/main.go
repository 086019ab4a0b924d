package main

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/expr-lang/expr"
	_ "github.com/invopop/jsonschema"
	_ "github.com/rs/zerolog"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "gopkg.in/yaml.v3"
)

func main() {}
