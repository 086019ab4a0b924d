package template

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/internal/regularfile"
)

// MaxDataFile bounds a data file's size: 64 MiB.
const MaxDataFile = 64 << 20

// Data is a table of values that {{data.NAME}} reads, one row per
// request as Order says. It is read-only once set up, so safe for
// concurrent use.
type Data struct {
	// File is the path it was read from, for messages.
	File string
	// Columns are the column names in file order.
	Columns []string
	// Rows hold one value per column, as text.
	Rows [][]string
	// Order picks a request's row; the zero value is ByRow.
	Order Order
	// Seed seeds the Random order's draw; unused by the others.
	Seed uint64
	// absent holds, per column, the first row (0-based) of a JSON file
	// whose object lacks that key, and how many rows lack it; nil when
	// every row has every column.
	absent map[int][2]int
}

// Order is how requests pick their data row (data_order). With n rows:
//
//	ByRow         request seq reads row (seq − 1) mod n: rows in turn (the default)
//	ByConnection  the request on connection slot s reads row s mod n: a
//	              virtual user keeps its row for the whole run
//	Random        row ⌊h·n / 2⁶⁴⌋ with h = mix(Seed, seq): a draw that
//	              depends only on the seed and seq, so a run repeats
//	              with the same seed and goroutines share no state
//
// In a flow seq is the iteration's, so every step of an iteration reads
// the same row.
type Order uint8

// The data orders.
const (
	ByRow Order = iota
	ByConnection
	Random
)

// orderNames are the data_order values, indexed by Order.
var orderNames = []string{"rows", "connection", "random"}

// String returns the order's data_order value.
func (o Order) String() string {
	if int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("Order(%d)", o)
}

// OrderNames returns the data_order values in the order messages list
// them; a new slice on every call.
func OrderNames() []string { return slices.Clone(orderNames) }

// SetOrder applies a driver's data_order and data_seed to d, which is
// nil when the driver has no data file. order "" means rows. Errors are
// *drivers.ConfigError keyed data_order or data_seed, joined: an unknown
// order; random without data_seed, or with 0; data_seed with another
// order; either key without a data file. There is no default seed: a
// random order names its seed, so the run can be repeated.
func SetOrder(d *Data, order string, seed int64) error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &drivers.ConfigError{Key: key, Err: fmt.Errorf(format, a...)})
	}
	o := ByRow
	if order != "" {
		i := slices.Index(orderNames, order)
		if i < 0 {
			bad("data_order", "data_order %q: expected %s", order, strings.Join(orderNames, ", "))
		} else {
			o = Order(i)
		}
	}
	switch {
	case o == Random && seed == 0:
		bad("data_seed", "data_order random needs a data_seed, a nonzero integer, so that the run can be repeated")
	case o != Random && seed != 0:
		bad("data_seed", "data_seed seeds data_order: random; the order here is %s", o)
	}
	if d == nil && (order != "" || seed != 0) {
		key := "data_order"
		if order == "" {
			key = "data_seed"
		}
		bad(key, "%s applies to a data file, and there is none (data: FILE)", key)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if d != nil {
		d.Order, d.Seed = o, uint64(seed)
	}
	return nil
}

// Lacks returns an error when some row of a JSON file has no key for
// column c: it names the file, the first such row (1-based) and how many.
func (d *Data) Lacks(c int) error {
	a, ok := d.absent[c]
	if !ok {
		return nil
	}
	more := ""
	if a[1] > 1 {
		more = fmt.Sprintf(" (and %d more rows)", a[1]-1)
	}
	return fmt.Errorf("the data file %s, row %d%s: no key %q; every row must give every column a template reads (\"\" for an empty value)", d.File, a[0]+1, more, d.Columns[c])
}

// Column returns the index of the column named name, or -1.
func (d *Data) Column(name string) int { return slices.Index(d.Columns, name) }

// Row returns the row that the request with sequence number seq, sent on
// connection slot slot, reads (see Order). seq 0 reads as seq 1, and a
// negative slot as 0.
func (d *Data) Row(seq uint64, slot int) []string {
	n := uint64(len(d.Rows))
	if seq == 0 {
		seq = 1
	}
	switch d.Order {
	case ByConnection:
		return d.Rows[uint64(max(slot, 0))%n]
	case Random:
		// Lemire's multiply-shift maps the 64-bit hash onto [0, n)
		// without a division.
		i, _ := bits.Mul64(mix(d.Seed, seq), n)
		return d.Rows[i]
	default:
		return d.Rows[(seq-1)%n]
	}
}

// mix hashes (seed, seq) to 64 bits: SplitMix64's finalizer (Steele,
// Lea and Flood, "Fast splittable pseudorandom number generators",
// 2014) over seed + seq·γ, γ the golden-ratio increment, so consecutive
// seqs land far apart.
func mix(seed, seq uint64) uint64 {
	z := seed + seq*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// LoadData reads a data file by its extension:
//
//   - .csv: a header row of column names, then one row per record; every
//     row has as many fields as the header (RFC 4180 quoting);
//   - .json: an array of objects; the columns are the union of their keys
//     in first-seen order; a string value is used as is, any other value
//     as its JSON text. A row without a key a template reads is refused
//     when the template is parsed (Parse), never rendered as nothing.
//
// Errors: an unreadable file, a file over MaxDataFile, no rows, a ragged
// or malformed CSV (with its line), JSON that is not an array of objects
// (with the offending element's index), duplicate column names.
func LoadData(path string) (*Data, error) {
	// A named pipe or a device would block or never end: a data file is
	// a regular file.
	b, err := regularfile.ReadPrefix(path, MaxDataFile+1)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDataFile {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, MaxDataFile>>20)
	}
	var d *Data
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		d, err = parseCSV(b)
	case ".json":
		d, err = parseJSON(b)
	default:
		return nil, fmt.Errorf("%s: unknown data file type; expected .csv or .json", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.File = path
	if len(d.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return d, nil
}

func parseCSV(b []byte) (*Data, error) {
	// A UTF-8 byte order mark, as spreadsheets export, is no part of the
	// first column's name (it made "user" unfindable, and invisible in
	// the message).
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(b))
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("empty: expected a header row of column names")
	}
	d := &Data{Columns: recs[0]}
	if err := checkColumns(d.Columns); err != nil {
		return nil, err
	}
	d.Rows = recs[1:]
	return d, nil
}

func parseJSON(b []byte) (*Data, error) {
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err != nil {
		return nil, fmt.Errorf("expected a JSON array of objects: %v", err)
	}
	d := &Data{}
	objs := make([]map[string]json.RawMessage, len(arr))
	for i, raw := range arr {
		dec := json.NewDecoder(bytes.NewReader(raw))
		tok, err := dec.Token()
		if err != nil || tok != json.Delim('{') {
			return nil, fmt.Errorf("element %d: expected an object", i)
		}
		obj := map[string]json.RawMessage{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("element %d: %v", i, err)
			}
			key := k.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("element %d: %v", i, err)
			}
			if _, dup := obj[key]; dup {
				return nil, fmt.Errorf("element %d: duplicate key %q", i, key)
			}
			obj[key] = v
			if !slices.Contains(d.Columns, key) {
				d.Columns = append(d.Columns, key)
			}
		}
		objs[i] = obj
	}
	for i, obj := range objs {
		row := make([]string, len(d.Columns))
		for c, name := range d.Columns {
			v, ok := obj[name]
			if !ok {
				if d.absent == nil {
					d.absent = map[int][2]int{}
				}
				a, seen := d.absent[c]
				if !seen {
					a[0] = i
				}
				a[1]++
				d.absent[c] = a
				continue
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				row[c] = s
			} else {
				row[c] = string(v)
			}
		}
		d.Rows = append(d.Rows, row)
	}
	return d, nil
}

func checkColumns(cols []string) error {
	seen := map[string]bool{}
	for i, c := range cols {
		if c == "" {
			return fmt.Errorf("header column %d has no name", i+1)
		}
		if seen[c] {
			return fmt.Errorf("duplicate column %q in the header", c)
		}
		seen[c] = true
	}
	return nil
}
