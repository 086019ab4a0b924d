package schema

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/runner-dev/runner/internal/regularfile"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxFile bounds a scenario file, in bytes (1 MiB); anything larger is
// surely not one.
const MaxFile = maxFileSize

const (
	// maxFileSize bounds a scenario file; anything larger is surely not one.
	maxFileSize = 1 << 20
	// maxProblems bounds the problems reported for one file.
	maxProblems = 100
	// nodeBudget bounds the values decoded, counting every expansion of
	// an alias, so that anchors cannot make loading slow.
	nodeBudget = 100_000
)

// Load reads the scenario file at path and returns it validated, with
// every default filled in (see Parse). Environment variables come from
// the process. A file that cannot be read is a plain error wrapping the
// os error; an invalid file is an *Errors listing every problem.
func Load(path string) (*Scenario, error) { return LoadWith(path, Options{}) }

// Options adjust loading. The zero value means the defaults.
type Options struct {
	// Env looks up `${NAME}` variables; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// CheckRule, when non-nil, compiles a rule expression (of `assert` and
	// `reconcile.expect`); its error is reported among the file's other
	// problems at the rule's line and column. The schema package does not
	// know the rule language: the engine supplies it.
	CheckRule func(expr string) error
	// RuleReads, when non-nil, returns the metrics a rule expression
	// reads, as rules write them: "p99", `errors_by["503"]`,
	// "server.requests", "median(server.requests)". It is called for the
	// rules that CheckRule accepted. Validation uses it to reject a rule
	// that reads the target's counters (server.<counter>) when there is no
	// reconcile.fetch to read them, a rule that could only ever be
	// inconclusive.
	RuleReads func(expr string) []string
}

// LoadWith is Load with options.
func LoadWith(path string, o Options) (*Scenario, error) {
	// A named pipe or a device would block (opening a FIFO waits for a
	// writer) or never end: a scenario is a regular file.
	data, err := regularfile.ReadPrefix(path, maxFileSize+1) // the parser refuses a larger one
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return ParseWith(path, data, o)
}

// Parse decodes and validates the scenario in data; name is the file name
// used in messages and, without directory and extension, the default
// scenario name. env looks up `${NAME}` variables; nil means os.LookupEnv.
//
// On success every default is filled in: Name, Repeats 1, phase names
// "phase-N", and for HTTP method GET, path "/", version "1.1", keep-alive
// on, timeout 10s; for the open model connections 1, inflight 1, arrivals
// "uniform", seed 1, on_saturation "queue".
//
// If the scenario is invalid, Parse returns a nil Scenario and an *Errors
// holding every problem found, in file order. Parse never panics.
func Parse(name string, data []byte, env func(string) (string, bool)) (s *Scenario, err error) {
	return ParseWith(name, data, Options{Env: env})
}

// ParseWith is Parse with options.
func ParseWith(name string, data []byte, o Options) (s *Scenario, err error) {
	env := o.Env
	if env == nil {
		env = os.LookupEnv
	}
	l := &loader{
		file:    name,
		env:     env,
		check:   o.CheckRule,
		reads:   o.RuleReads,
		seen:    map[Error]bool{},
		nodes:   map[string]*yaml.Node{},
		invalid: map[string]bool{},
		sources: map[string]string{},
		budget:  nodeBudget,
	}
	defer func() {
		// A panic here is a bug of this package, never the user's fault;
		// report it as a problem rather than crash the caller.
		if r := recover(); r != nil {
			s, err = nil, &Errors{List: []*Error{{File: name, Msg: fmt.Sprintf("internal error while loading the scenario (please report): %v", r)}}}
		}
	}()
	s = l.load(data)
	if len(l.errs) > 0 {
		sortErrors(l.errs)
		if l.truncated {
			l.errs = append(l.errs, &Error{File: name, Msg: fmt.Sprintf("too many problems; stopped after %d", maxProblems)})
		}
		return nil, &Errors{List: l.errs}
	}
	return s, nil
}

// loader walks the YAML node tree of one file into a Scenario. It is used
// once, by one goroutine.
type loader struct {
	file      string
	env       func(string) (string, bool)
	check     func(string) error
	reads     func(string) []string
	errs      []*Error
	seen      map[Error]bool // problems recorded, by position, path template and message
	truncated bool
	// nodes holds the value node of every key path decoded, so that
	// validation can point at the value it rejects.
	nodes map[string]*yaml.Node
	// invalid marks the key paths already reported, so that validation
	// does not judge a value that failed to decode.
	invalid map[string]bool
	// sources holds the text as written of values built by ${...}
	// interpolation, to show in messages instead of the values.
	sources map[string]string
	secrets []string
	budget  int
}

func (l *loader) load(data []byte) *Scenario {
	if len(data) > maxFileSize {
		l.errorf(nil, "", "file larger than %d bytes; a scenario is a short YAML file", maxFileSize)
		return nil
	}
	if line, col, msg, bad := badText(data); bad {
		// The YAML parser says so too, but without the position.
		l.add(&Error{File: l.file, Line: line, Col: col, Path: pathAt(data, line, col), Msg: msg})
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.errorf(nil, "", "empty file; expected a scenario with version, target, driver and phases")
		} else {
			l.syntaxError(err, data)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		l.syntaxError(err, data)
	default:
		l.errorf(&extra, "", "a second YAML document; a scenario file holds exactly one")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		l.errorf(&doc, "", "expected one YAML document")
		return nil
	}
	var s Scenario
	l.decode(doc.Content[0], "", reflect.ValueOf(&s).Elem())
	l.validate(&s)
	if len(l.errs) > 0 {
		return nil
	}
	s.File = l.file
	if s.Name == "" {
		base := filepath.Base(l.file)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
		if s.Name == "" || s.Name == "." || s.Name == string(filepath.Separator) {
			s.Name = "scenario"
		}
	}
	s.Secrets = slices.Compact(slices.Sorted(slices.Values(l.secrets)))
	s.pos = make(map[string]position, len(l.nodes))
	for path, n := range l.nodes {
		s.pos[path] = position{n.Line, n.Column}
	}
	fillDefaults(&s)
	return &s
}

// badText finds the first character of data that a YAML file may not
// hold: a byte that is not UTF-8, or a control character other than tab,
// line feed and carriage return (YAML 1.2 §5.1). It returns its line and
// column (1-based, the column in characters) and what is wrong with it.
//
// A scenario file is UTF-8. A UTF-16 file is refused: at 1:1 when it
// starts with a UTF-16 byte order mark (FF FE or FE FF, which the YAML
// parser would otherwise decode), at its first NUL byte when it does not
// (its ASCII characters come with one each). A UTF-8 byte order mark (EF BB BF), which some editors
// write, is accepted and skipped.
func badText(data []byte) (line, col int, msg string, bad bool) {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return 1, 1, "UTF-16 text (it starts with a UTF-16 byte order mark); a scenario file is UTF-8: convert it, e.g. iconv -f UTF-16 -t UTF-8", true
	}
	line, col = 1, 1
	// The parser skips a UTF-8 byte order mark, and does not count it.
	for i := len(bom(data)); i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, col, fmt.Sprintf("invalid UTF-8: byte 0x%02x; a scenario file is UTF-8 text", data[i]), true
		case r == 0:
			// UTF-16 without a byte order mark: "v\0e\0…" or "\0v\0e…".
			return line, col, "NUL byte: the file looks like UTF-16 (or binary); a scenario file is UTF-8 text: convert it, e.g. iconv -f UTF-16 -t UTF-8", true
		case !yamlPrintable(r):
			what, escape := "character", fmt.Sprintf(`\u%04X`, r)
			if r <= 0xff {
				what, escape = "control character", fmt.Sprintf(`\x%02X`, r)
			}
			return line, col, fmt.Sprintf("%s %U is not allowed in YAML; write it as an escape in a double-quoted string, e.g. \"%s\"", what, r, escape), true
		}
		i += size
		switch {
		case r == '\n', r == 0x85, r == 0x2028, r == 0x2029, r == '\r' && (i == len(data) || data[i] != '\n'):
			// Line breaks as YAML counts them; \r\n is one.
			line, col = line+1, 1
		case r == '\r':
		default:
			col++
		}
	}
	return 0, 0, "", false
}

// pathAt returns the key path of the key or scalar value that holds the
// character at line:col of data, a file that badText rejects, or "" if
// none does (the character is in a comment, or the file is not YAML even
// with the characters badText rejects replaced).
func pathAt(data []byte, line, col int) string {
	var clean []byte
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 || !yamlPrintable(r) {
			r = utf8.RuneError
		}
		clean = utf8.AppendRune(clean, r)
		i += size
	}
	var doc yaml.Node
	if yaml.Unmarshal(clean, &doc) != nil || len(doc.Content) != 1 {
		return ""
	}
	// The last node that starts at or before line:col, in file order, is
	// the one that holds the character, if any does.
	var last *yaml.Node
	path := ""
	consider := func(n *yaml.Node, p string) {
		if n.Line < line || n.Line == line && n.Column <= col {
			last, path = n, p
		}
	}
	var walk func(n *yaml.Node, p string, depth int)
	walk = func(n *yaml.Node, p string, depth int) {
		if depth > 100 {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			consider(n, p)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := join(p, n.Content[i].Value)
				consider(n.Content[i], k)
				walk(n.Content[i+1], k, depth+1)
			}
		case yaml.SequenceNode:
			consider(n, p)
			for i, item := range n.Content {
				walk(item, index(p, i), depth+1)
			}
		case yaml.ScalarNode:
			consider(n, p)
		}
	}
	walk(doc.Content[0], "", 0)
	if last == nil || last.Kind != yaml.ScalarNode || !strings.ContainsRune(last.Value, utf8.RuneError) ||
		last.Line != line && !strings.Contains(last.Value, "\n") {
		return ""
	}
	return path
}

// bom returns the UTF-8 byte order mark data starts with, if any.
func bom(data []byte) []byte {
	if m := []byte("\ufeff"); bytes.HasPrefix(data, m) {
		return m
	}
	return nil
}

// yamlPrintable reports whether r may appear in a YAML file (YAML 1.2
// §5.1, as the parser checks it).
func yamlPrintable(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || 0x20 <= r && r <= 0x7e || r == 0x85 ||
		0xa0 <= r && r <= 0xd7ff || 0xe000 <= r && r <= 0xfffd || 0x10000 <= r && r <= 0x10ffff
}

var (
	yamlLine      = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	unknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// syntaxError turns a YAML parser error on data into a problem with a
// line number. yaml.v3 names no line for an alias to an unknown anchor
// (`*nope`): the alias is found in the text.
func (l *loader) syntaxError(err error, data []byte) {
	msg := err.Error()
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		// YAML breaks lines at \r\n, \r and \n alike.
		data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		e := &Error{File: l.file, Msg: fmt.Sprintf("invalid YAML: unknown anchor %q: *%s refers to no &%s defined before it", m[1], m[1], m[1])}
		if line, col, ok := aliasAt(data, m[1]); ok {
			e.Line, e.Col = line, col
			// The key whose value the alias is; none when the alias is
			// itself a key (the path would name the blank put in its place).
			if p := pathAt(blankAlias(data, line, col, m[1]), line, col); !strings.ContainsRune(p, '\uFFFD') {
				e.Path = p
			}
		}
		l.add(e)
		return
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		text := m[2]
		if strings.HasPrefix(text, "did not find expected ',' or") {
			// yaml.v3 reports an unclosed flow collection at its opening
			// mark, 0-based; the file's lines are 1-based.
			line++
			text += " (a [ ] or { } opened on this line is not closed; quote values such as {{seq}} inside it)"
		}
		l.add(&Error{File: l.file, Line: line, Msg: "invalid YAML: " + text})
		return
	}
	// yaml.v3 leaves the line out exactly when the problem and its
	// context are on the first line (its marks are 0-based, and line 0
	// reads as "no line"), e.g. an unclosed quote on line 1.
	l.add(&Error{File: l.file, Line: 1, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
}

// add records a problem, once: an anchor used many times would repeat
// its problems at the same position, with paths that differ only in indexes.
func (l *loader) add(e *Error) {
	k := *e
	k.Path = template(k.Path)
	if l.seen[k] {
		return
	}
	l.seen[k] = true
	if len(l.errs) >= maxProblems {
		l.truncated = true
		return
	}
	l.errs = append(l.errs, e)
}

// errorf records a problem at node n (nil: the whole file) and key path.
func (l *loader) errorf(n *yaml.Node, path, format string, args ...any) {
	if path != "" {
		l.invalid[path] = true
	}
	e := &Error{File: l.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	l.add(e)
}

// failf records a problem at the value of path or, if path was not in the
// file, at its nearest ancestor that was.
func (l *loader) failf(path, format string, args ...any) {
	l.errorf(l.at(path), path, format, args...)
}

// Pos returns the line and column (1-based) where the file the scenario
// was loaded from writes the value of a key path, e.g.
// `driver.http.tls.ca_file` or `phases[0].open.rate` (paths are spelt as
// in the messages of this package), or, if the file does not write that
// key, its nearest ancestor that it writes. It returns 0, 0 for a
// scenario not loaded from a file (built in Go or read from JSON), and
// for a nil s. Callers that check a loaded scenario further (a driver, a
// reference target's arguments) use it to give their problems the
// position that every problem of a scenario has.
func (s *Scenario) Pos(path string) (line, col int) {
	if s == nil || s.pos == nil {
		return 0, 0
	}
	for {
		if p, ok := s.pos[path]; ok {
			return p.line, p.col
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			p := s.pos[""]
			return p.line, p.col
		}
		path = path[:i]
	}
}

// at returns the node of path or of its nearest ancestor in the file.
func (l *loader) at(path string) *yaml.Node {
	for {
		if n, ok := l.nodes[path]; ok {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return l.nodes[""]
		}
		path = path[:i]
	}
}

// has reports whether path was written in the file.
func (l *loader) has(path string) bool {
	_, ok := l.nodes[path]
	return ok
}

// spend takes one unit of the node budget and reports whether any was left.
func (l *loader) spend() bool {
	l.budget--
	if l.budget == -1 {
		l.errorf(nil, "", "more than %d values after expanding aliases; simplify the anchors", nodeBudget)
	}
	return l.budget >= 0
}

// deref follows aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

var (
	durationType = reflect.TypeFor[Duration]()
	rateType     = reflect.TypeFor[Rate]()
	sizeType     = reflect.TypeFor[Size]()
	rateSpecType = reflect.TypeFor[RateSpec]()
	ruleType     = reflect.TypeFor[Rule]()
)

// decode stores the value of node n, found at path, into v, reporting
// every problem it meets on the way.
func (l *loader) decode(n *yaml.Node, path string, v reflect.Value) {
	if !l.spend() {
		return
	}
	n = deref(n)
	l.nodes[path] = n
	switch v.Type() {
	case durationType:
		if d, ok := withUnit(l, n, path, "duration", parseDuration); ok {
			v.SetInt(int64(d))
		}
		return
	case rateType:
		if r, ok := l.rate(n, path); ok {
			v.SetFloat(float64(r))
		}
		return
	case sizeType:
		if size, ok := withUnit(l, n, path, "size", parseSize); ok {
			v.SetInt(int64(size))
		}
		return
	case rateSpecType:
		l.rateSpec(n, path, v.Addr().Interface().(*RateSpec))
		return
	case ruleType:
		l.rule(n, path, v.Addr().Interface().(*Rule))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		l.budget++ // the pointee is the same value
		l.decode(n, path, v.Elem())
	case reflect.Struct:
		l.structure(n, path, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			l.errorf(n, path, "expected %s, found %s", want(v.Type()), found(n))
			return
		}
		list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			l.decode(item, index(path, i), list.Index(i))
		}
		v.Set(list)
	case reflect.Map:
		l.dictionary(n, path, v)
	case reflect.String:
		if sc, ok := l.scalar(n, path, "a string", true); ok {
			if sc.tag == "!!null" {
				l.errorf(n, path, "expected a string, found %s", sc.found())
				return
			}
			v.SetString(sc.value)
		}
	case reflect.Int, reflect.Int64:
		if sc, ok := l.scalar(n, path, "an integer", false); ok {
			i, ok := sc.integer()
			// YAML makes a whole number too large for an integer a float.
			whole := sc.typed() == "!!int" || sc.typed() == "!!float" && plainInt.MatchString(strings.ReplaceAll(sc.value, "_", ""))
			switch {
			case !whole:
				l.errorf(n, path, "expected an integer, found %s", sc.found())
			case !ok || v.OverflowInt(i):
				l.errorf(n, path, "out of range: %s; expected an integer from %d to %d", sc.found(), int64(math.MinInt64), int64(math.MaxInt64))
			default:
				v.SetInt(i)
			}
		}
	case reflect.Bool:
		if sc, ok := l.scalar(n, path, "a boolean (true or false)", false); ok {
			if sc.typed() != "!!bool" {
				l.errorf(n, path, "expected a boolean (true or false), found %s", sc.found())
				return
			}
			v.SetBool(strings.EqualFold(sc.value, "true"))
		}
	default:
		l.errorf(n, path, "internal error: no decoder for %s", v.Type())
	}
}

// field is one key of a YAML mapping decoded into a struct.
type field struct {
	key      string
	index    int
	typ      reflect.Type
	required bool // yaml tag without omitempty; the JSON Schema agrees
}

// fieldsOf lists the YAML keys of struct type t in declaration order.
func fieldsOf(t reflect.Type) []field {
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		key, opts, _ := strings.Cut(tag, ",")
		fields = append(fields, field{key: key, index: i, typ: f.Type, required: !strings.Contains(opts, "omitempty")})
	}
	return fields
}

func keysOf(fields []field) []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

// structure decodes a mapping into struct v by its yaml tags.
func (l *loader) structure(n *yaml.Node, path string, v reflect.Value) {
	fields := fieldsOf(v.Type())
	if n.Kind != yaml.MappingNode {
		l.errorf(n, path, "expected %s, found %s", want(v.Type()), found(n))
		return
	}
	seen := map[string]bool{}
	for _, p := range l.pairs(n, path) {
		key := p.key.Value
		i := slices.IndexFunc(fields, func(f field) bool { return f.key == key })
		if i < 0 {
			l.unknownKey(p, path, keysOf(fields))
			continue
		}
		seen[key] = true
		l.decode(p.value, join(path, key), v.Field(fields[i].index))
	}
	for _, f := range fields {
		if f.required && !seen[f.key] {
			l.missing(n, join(path, f.key), f.typ)
		}
	}
}

// missing reports a required key that is not in mapping n.
func (l *loader) missing(n *yaml.Node, path string, t reflect.Type) {
	if path == "version" {
		l.errorf(n, path, "required key missing; write version: 1 (the version of the scenario format)")
		return
	}
	l.errorf(n, path, "required key missing; expected %s", want(t))
}

// pair is one key and its value in a mapping.
type pair struct{ key, value *yaml.Node }

// pairs returns the entries of mapping n in file order, with merge keys
// (`<<: *anchor`) expanded: keys written in n win over merged ones, and
// earlier merged mappings win over later ones, as YAML specifies. A key
// written twice in n is reported, naming both lines, and its second value
// ignored.
func (l *loader) pairs(n *yaml.Node, path string) []pair {
	return l.mergedPairs(n, path, map[*yaml.Node]bool{})
}

func (l *loader) mergedPairs(n *yaml.Node, path string, visiting map[*yaml.Node]bool) []pair {
	if visiting[n] {
		l.errorf(n, path, "a merge key that includes its own mapping")
		return nil
	}
	visiting[n] = true
	defer delete(visiting, n)

	var own, merged []pair
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, path, "expected a key name, found %s", found(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merged = append(merged, l.merge(v, path, visiting)...)
			continue
		}
		if prev, dup := first[k.Value]; dup {
			l.errorf(k, join(path, k.Value), "duplicate key %s: first at line %d, again at line %d; keep one", quote(k.Value), prev.Line, k.Line)
			continue
		}
		first[k.Value] = k
		own = append(own, pair{k, v})
	}
	for _, p := range merged {
		if first[p.key.Value] == nil {
			first[p.key.Value] = p.key
			own = append(own, p)
		}
	}
	return own
}

// merge returns the entries that the value of a merge key brings in: a
// mapping, or a list of mappings.
func (l *loader) merge(v *yaml.Node, path string, visiting map[*yaml.Node]bool) []pair {
	v = deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		return l.mergedPairs(v, path, visiting)
	case yaml.SequenceNode:
		var all []pair
		seen := map[string]bool{}
		for _, item := range v.Content {
			item = deref(item)
			if item.Kind != yaml.MappingNode {
				l.errorf(item, path, "expected a mapping to merge, found %s", found(item))
				continue
			}
			for _, p := range l.mergedPairs(item, path, visiting) {
				if !seen[p.key.Value] {
					seen[p.key.Value] = true
					all = append(all, p)
				}
			}
		}
		return all
	}
	l.errorf(v, path, "expected a mapping or a list of mappings to merge, found %s", found(v))
	return nil
}

// dictionary decodes a mapping of names to strings (HTTP headers).
func (l *loader) dictionary(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, path, "expected %s, found %s", want(v.Type()), found(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	for _, p := range l.pairs(n, path) {
		val := reflect.New(v.Type().Elem()).Elem()
		l.decode(p.value, join(path, p.key.Value), val)
		m.SetMapIndex(reflect.ValueOf(p.key.Value), val)
	}
	v.Set(m)
}

// rate decodes a single rate such as 300/s.
func (l *loader) rate(n *yaml.Node, path string) (Rate, bool) {
	return withUnit(l, n, path, "rate", parseRate)
}

// withUnit decodes the scalar n, a value of kind "duration", "rate" or
// "size", with parse, and reports a problem when it is not one: the
// syntax expected, or that its value is out of range.
func withUnit[T any](l *loader, n *yaml.Node, path, kind string, parse func(string) (T, error)) (T, bool) {
	var zero T
	want := map[string]string{"duration": durationWant, "rate": rateWant, "size": sizeWant}[kind]
	sc, ok := l.scalar(n, path, want, false)
	if !ok {
		return zero, false
	}
	v, err := parse(sc.value)
	switch {
	case sc.typed() != "!!str" || errors.Is(err, errSyntax):
		l.errorf(n, path, "expected %s; found %s", want, sc.found())
	case err != nil:
		l.errorf(n, path, "%s", unitProblem(err, kind, l.show(path, sc.value)))
	default:
		return v, true
	}
	return zero, false
}

const rateSpecWant = rateWant + ", or a ramp {from: 10/s, to: 100/s}"

// rateSpec decodes a constant rate or a ramp {from, to}.
func (l *loader) rateSpec(n *yaml.Node, path string, rs *RateSpec) {
	if n.Kind != yaml.MappingNode {
		if n.Kind != yaml.ScalarNode {
			l.errorf(n, path, "expected %s; found %s", rateSpecWant, found(n))
			return
		}
		if r, ok := l.rate(n, path); ok {
			*rs = RateSpec{From: r, To: r}
		}
		return
	}
	rs.Ramp = true
	keys := []string{"from", "to"}
	seen := map[string]bool{}
	for _, p := range l.pairs(n, path) {
		key := p.key.Value
		if !slices.Contains(keys, key) {
			l.unknownKey(p, path, keys)
			continue
		}
		seen[key] = true
		l.nodes[join(path, key)] = deref(p.value)
		if !l.spend() {
			return
		}
		r, ok := l.rate(deref(p.value), join(path, key))
		if !ok {
			continue
		}
		if key == "from" {
			rs.From = r
		} else {
			rs.To = r
		}
	}
	for _, key := range keys {
		if !seen[key] {
			l.errorf(n, join(path, key), "required key missing; expected %s", rateWant)
		}
	}
}

const ruleWant = "a rule: a string such as p99 < 20ms, or {rule: ..., phase: NAME}"

// rule decodes a rule written as a string or as {rule, phase}. The rule
// expression is kept as text; the engine compiles it.
func (l *loader) rule(n *yaml.Node, path string, r *Rule) {
	expr := func(n *yaml.Node, path string) {
		sc, ok := l.scalar(n, path, ruleWant, true)
		if !ok {
			return
		}
		if sc.tag != "!!str" {
			l.errorf(n, path, "expected %s; found %s (quote it to make it a string)", ruleWant, sc.found())
			return
		}
		r.Expr, r.Line, r.Col = sc.value, n.Line, n.Column
		if strings.TrimSpace(sc.value) == "" {
			l.errorf(n, path, "empty rule; expected an expression such as p99 < 20ms")
			return
		}
		if l.check != nil {
			if err := l.check(sc.value); err != nil {
				l.errorf(n, path, "%v", err)
			}
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		expr(n, path)
		return
	case yaml.MappingNode:
	default:
		l.errorf(n, path, "expected %s; found %s", ruleWant, found(n))
		return
	}
	keys := []string{"rule", "phase"}
	seen := map[string]bool{}
	for _, p := range l.pairs(n, path) {
		key := p.key.Value
		if !slices.Contains(keys, key) {
			l.unknownKey(p, path, keys)
			continue
		}
		seen[key] = true
		v := deref(p.value)
		l.nodes[join(path, key)] = v
		if !l.spend() {
			return
		}
		if key == "rule" {
			expr(v, join(path, key))
			continue
		}
		if sc, ok := l.scalar(v, join(path, key), "a phase name", true); ok {
			if sc.tag == "!!null" || sc.value == "" {
				l.errorf(v, join(path, key), "expected a phase name, found %s", sc.found())
				continue
			}
			r.Phase = sc.value
		}
	}
	if !seen["rule"] {
		l.errorf(n, join(path, "rule"), "required key missing; expected the rule's expression, e.g. {rule: p99 < 20ms, phase: steady}")
	}
}

// want describes what a value of type t looks like, for messages.
func want(t reflect.Type) string {
	switch t {
	case durationType:
		return durationWant
	case rateType:
		return rateWant
	case sizeType:
		return sizeWant
	case rateSpecType:
		return rateSpecWant
	case ruleType:
		return ruleWant
	case reflect.TypeFor[[]Rule]():
		return "a list of rules, e.g. [p99 < 20ms, errors == 0]"
	case reflect.TypeFor[[]Phase]():
		return "a list of phases"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem())
	case reflect.Struct:
		return "a mapping with keys " + strings.Join(keysOf(fieldsOf(t)), ", ")
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(want(t.Elem()), "a "), "an ") + "s"
	case reflect.Map:
		return "a mapping of names to strings"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean (true or false)"
	}
	return t.String()
}

// found describes a node that is not what was expected.
func found(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return scalar{node: n, value: n.Value, tag: n.ShortTag()}.found()
	case yaml.AliasNode:
		return "an alias to nothing"
	}
	return "nothing"
}

// aliasAt finds the first alias `*name` in data outside comments and
// quoted strings, and returns its line and column (1-based, in
// characters, as the parser counts them: a UTF-8 byte order mark is not
// counted); ok is false when there is none.
func aliasAt(data []byte, name string) (line, col int, ok bool) {
	alias := "*" + name
	for i, text := range strings.Split(string(bytes.TrimPrefix(data, bom(data))), "\n") {
		var quote rune
		prev := ' '
	scan:
		for j, r := range text {
			switch {
			case quote != 0:
				if r == quote {
					quote = 0
				}
			case r == '"' || r == '\'':
				quote = r
			case r == '#' && (prev == ' ' || prev == '\t'):
				break scan // the rest of the line is a comment
			case r == '*' && strings.ContainsRune(" \t[{,:?", prev) && strings.HasPrefix(text[j:], alias):
				// yaml.v3 ends an alias's name at a blank or at one of ?:,]}%@`.
				if rest := text[j+len(alias):]; rest == "" || strings.ContainsAny(rest[:1], " \t\r?:,]}%@`") {
					return i + 1, utf8.RuneCountInString(text[:j]) + 1, true
				}
			}
			prev = r
		}
	}
	return 0, 0, false
}

// blankAlias returns a copy of data with the alias `*name` at line:col
// (as aliasAt found it) replaced by U+FFFD padded to its width, so that
// the file parses and pathAt can name the key whose value it is.
func blankAlias(data []byte, line, col int, name string) []byte {
	lines := strings.Split(string(bytes.TrimPrefix(data, bom(data))), "\n")
	text := []rune(lines[line-1])
	for k := range utf8.RuneCountInString(name) + 1 {
		text[col-1+k] = ' '
	}
	text[col-1] = utf8.RuneError
	lines[line-1] = string(text)
	return []byte(strings.Join(lines, "\n"))
}
