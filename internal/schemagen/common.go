package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// modulePath is the import path of the module whose types are reflected;
// a package's directory is its import path without this prefix.
const modulePath = "github.com/runner-dev/runner"

// moduleRoot returns the directory of the module's go.mod: the working
// directory or its nearest ancestor that holds one (`go generate` runs in
// the package's directory, `go test` in this one).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if !strings.HasPrefix(string(b), "module "+modulePath+"\n") {
				return "", fmt.Errorf("%s is not the go.mod of %s", filepath.Join(dir, "go.mod"), modulePath)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// comments maps "pkgpath.Type" and "pkgpath.Type.Field" to the doc
// comments of the type declarations in files (paths relative to root,
// the module's directory), each on one line: the descriptions of the
// schema, so that there is one text to maintain. A type without a doc
// comment of its own takes its declaration group's; a field without one
// takes its line comment.
func comments(root string, files []string) (map[string]string, error) {
	text := func(groups ...*ast.CommentGroup) string {
		for _, g := range groups {
			if t := strings.Join(strings.Fields(g.Text()), " "); t != "" {
				return t
			}
		}
		return ""
	}
	m := map[string]string{}
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pkg := modulePath + "/" + filepath.ToSlash(filepath.Dir(file))
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				m[pkg+"."+ts.Name.Name] = text(ts.Doc, gd.Doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					for _, name := range fl.Names {
						m[pkg+"."+ts.Name.Name+"."+name.Name] = text(fl.Doc, fl.Comment)
					}
				}
			}
		}
	}
	return m, nil
}

// refs is a jsonschema.Reflector Mapper that refers to the definition
// of each type in custom by the type's name, as invopop/jsonschema does
// for a type with a JSONSchema method; addDefinitions adds them.
func refs(custom map[reflect.Type]*jsonschema.Schema) func(reflect.Type) *jsonschema.Schema {
	return func(t reflect.Type) *jsonschema.Schema {
		if _, ok := custom[t]; ok {
			return &jsonschema.Schema{Ref: "#/$defs/" + t.Name()}
		}
		return nil
	}
}

// addDefinitions adds the schemas of custom to s's definitions under
// their types' names (refs refers to them).
func addDefinitions(s *jsonschema.Schema, custom map[reflect.Type]*jsonschema.Schema) {
	for t, def := range custom {
		s.Definitions[t.Name()] = def
	}
}

// marshal returns s indented, with a final newline.
func marshal(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(unescapeHTML(b), '\n'), nil
}

// unescapeHTML undoes encoding/json's escaping of <, > and & in strings
// (Schema's own MarshalJSON escapes them, whatever the encoder is told),
// so that descriptions read `p99 < 20ms` in the file. An escape is only
// undone where its backslash starts an escape sequence.
func unescapeHTML(b []byte) []byte {
	escapes := map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if i+6 <= len(b) {
			if c, ok := escapes[string(b[i:i+6])]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, e.g. \\ or \"
		i++
	}
	return out
}
