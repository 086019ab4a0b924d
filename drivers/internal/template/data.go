package template

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/runner-dev/runner/internal/regularfile"
	"path/filepath"
	"slices"
	"strings"
)

// MaxDataFile bounds a data file's size: 64 MiB.
const MaxDataFile = 64 << 20

// Data is a table of values that {{data.NAME}} reads: request seq takes
// row (seq − 1) mod len(Rows), so rows cycle in order.
type Data struct {
	// File is the path it was read from, for messages.
	File string
	// Columns are the column names in file order.
	Columns []string
	// Rows hold one value per column, as text.
	Rows [][]string
}

func (d *Data) column(name string) int { return slices.Index(d.Columns, name) }

func (d *Data) row(seq uint64) []string {
	if seq == 0 {
		seq = 1
	}
	return d.Rows[(seq-1)%uint64(len(d.Rows))]
}

// LoadData reads a data file by its extension:
//
//   - .csv: a header row of column names, then one row per record; every
//     row has as many fields as the header (RFC 4180 quoting);
//   - .json: an array of objects; the columns are the union of their keys
//     in first-seen order; a string value is used as is, any other value
//     as its JSON text (a missing key renders as nothing).
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
	for _, obj := range objs {
		row := make([]string, len(d.Columns))
		for c, name := range d.Columns {
			v, ok := obj[name]
			if !ok {
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
