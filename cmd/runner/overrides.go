package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/runner-dev/runner/internal/regularfile"
	"github.com/runner-dev/runner/schema"
)

// overrides are the command line's changes to a scenario, applied to its
// YAML before it is loaded, so that the loader checks them as if they
// were written in the file: --set PATH=VALUE, and --duration, --rate and
// --connections for every phase that is not a warmup.
type overrides struct {
	sets                        []string
	duration, rate, connections string
}

// empty reports whether there is nothing to change.
func (o overrides) empty() bool {
	return len(o.sets) == 0 && o.duration == "" && o.rate == "" && o.connections == ""
}

// apply returns src with the overrides made. A PATH is dotted keys from
// the top of the file; a list item is named by its index from 0 or, in
// phases, by the phase's name: `repeats=5`, `phases.steady.duration=30s`,
// `phases.0.open.rate=200/s`, `driver.http.path=/health`. A VALUE is read
// as YAML (5 is a number, 30s a string, {from: 1/s, to: 9/s} a mapping).
// A missing mapping key is added; a missing list item or phase is an
// error naming the path. --duration sets every non-warmup phase's
// duration; --rate every non-warmup open phase's rate; --connections the
// connections of every non-warmup open or closed phase. Errors name the
// flag.
func (o overrides) apply(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return src, nil // the loader says what is wrong with it
	}
	root := doc.Content[0]
	for _, s := range o.sets {
		path, value, ok := strings.Cut(s, "=")
		if !ok || path == "" {
			return nil, fmt.Errorf("--set %q: want PATH=VALUE, e.g. phases.steady.duration=30s", s)
		}
		if err := setPath(root, strings.Split(path, "."), value); err != nil {
			return nil, fmt.Errorf("--set %s: %v", path, err)
		}
	}
	for _, c := range []struct{ flag, value, model, key string }{
		{"--duration", o.duration, "", "duration"},
		{"--rate", o.rate, "open", "rate"},
		{"--connections", o.connections, "open|closed", "connections"},
	} {
		if c.value == "" {
			continue
		}
		// The value is the flag's: an error in it names the flag, not
		// the line of the file it replaces. (The loader still checks the
		// result, e.g. a value beyond a limit.)
		if err := checkOverride(c.flag, c.value); err != nil {
			return nil, err
		}
		n := 0
		for _, ph := range items(lookup(root, "phases")) {
			if w := lookup(ph, "warmup"); w != nil && w.Value == "true" {
				continue
			}
			target := ph
			if c.model != "" {
				target = nil
				for _, m := range strings.Split(c.model, "|") {
					if t := lookup(ph, m); t != nil && t.Kind == yaml.MappingNode {
						target = t
					}
				}
			}
			if target == nil {
				continue
			}
			if err := setPath(target, []string{c.key}, c.value); err != nil {
				return nil, fmt.Errorf("%s: %v", c.flag, err)
			}
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%s %s: no phase it applies to (not a warmup%s)", c.flag, c.value, map[bool]string{true: ", model " + strings.ReplaceAll(c.model, "|", " or "), false: ""}[c.model != ""])
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkOverride reads the value of --duration, --rate or --connections
// in the scenario's own syntax: a duration with its unit, a rate N/s or
// N/m, a whole number of connections of at least 1.
func checkOverride(flag, value string) error {
	var err error
	switch flag {
	case "--duration":
		var d schema.Duration
		if d, err = schema.ParseDuration(value); err == nil && d <= 0 {
			err = fmt.Errorf("expected a positive duration")
		}
	case "--rate":
		_, err = schema.ParseRate(value)
	case "--connections":
		if n, e := strconv.Atoi(value); e != nil || n < 1 {
			err = fmt.Errorf("expected a whole number of connections of at least 1")
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %v", flag, value, err)
	}
	return nil
}

// lookup is the value of key in mapping m; nil when m is not a mapping
// or has no such key.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// items are the items of sequence s (nil when it is not one).
func items(s *yaml.Node) []*yaml.Node {
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	return s.Content
}

// setPath sets the value at path under n to value read as YAML.
func setPath(n *yaml.Node, path []string, value string) error {
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		return fmt.Errorf("value %q is not YAML: %v", value, err)
	}
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if len(v.Content) > 0 {
		val = v.Content[0]
	}
	for i, key := range path {
		last := i == len(path)-1
		switch n.Kind {
		case yaml.MappingNode:
			child := lookup(n, key)
			if child == nil {
				kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				n.Content = append(n.Content, kn, child)
			}
			if last {
				*child = *val
				return nil
			}
			n = child
		case yaml.SequenceNode:
			var child *yaml.Node
			if k, err := strconv.Atoi(key); err == nil && k >= 0 && k < len(n.Content) {
				child = n.Content[k]
			} else {
				for _, it := range n.Content {
					if nm := lookup(it, "name"); nm != nil && nm.Value == key {
						child = it
					}
				}
			}
			if child == nil {
				return fmt.Errorf("%s: no item %q (an index from 0 to %d, or a phase's name)", strings.Join(path[:i], "."), key, len(n.Content)-1)
			}
			if last {
				*child = *val
				return nil
			}
			n = child
		default:
			return fmt.Errorf("%s is a value, not a mapping or a list", strings.Join(path[:i], "."))
		}
	}
	return nil
}

// readScenario reads a scenario file as the loader would (a regular file,
// at most schema.MaxFile bytes), for the overrides to change it.
func readScenario(file string) ([]byte, error) {
	return regularfile.ReadFile(file, schema.MaxFile)
}

// overrideFlags adds --set, --duration, --rate and --connections to cmd.
func overrideFlags(cmd *cobra.Command, o *overrides) {
	cmd.Flags().StringArrayVar(&o.sets, "set", nil, "PATH=VALUE: change the scenario before it is loaded, e.g. repeats=5 or phases.steady.duration=30s (a list item by index from 0 or a phase by name; VALUE read as YAML; repeatable)")
	cmd.Flags().StringVar(&o.duration, "duration", "", "set the duration of every phase that is not a warmup, e.g. 30s")
	cmd.Flags().StringVar(&o.rate, "rate", "", "set the arrival rate of every open phase that is not a warmup, e.g. 500/s")
	cmd.Flags().StringVar(&o.connections, "connections", "", "set the connections of every open or closed phase that is not a warmup")
}
