package metric

import "testing"

// Every name, JSON key, TSV column and repeat-summary key is declared
// once, and every metric can be read.
func TestCatalogueUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if d.Read == nil {
			t.Errorf("%+v: no Read", d)
		}
		if d.Name == "" && d.JSON == "" && d.TSV == "" {
			t.Errorf("a metric no one reads: %+v", d)
		}
		for _, k := range []string{"rule " + d.Name, "json " + d.JSON, "tsv " + d.TSV, "across " + d.Across} {
			if k[len(k)-1] == ' ' {
				continue
			}
			if seen[k] {
				t.Errorf("%s declared twice", k)
			}
			seen[k] = true
		}
		if d.P > 0 && d.MinSamples() != MinSamples(d.P) {
			t.Errorf("%s: guard %d", d.Name, d.MinSamples())
		}
	}
}

// The nearest-rank guard: ten samples expected above the percentile.
func TestMinSamples(t *testing.T) {
	for p, want := range map[float64]int64{0: 1, 50: 20, 90: 100, 95: 200, 99: 1000, 99.9: 10000, 99.99: 100000, 100: 1<<63 - 1} {
		if got := MinSamples(p); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", p, got, want)
		}
	}
}

// Add returns the function that removes what it added.
func TestAddRemove(t *testing.T) {
	n, v := len(All()), Version()
	remove := Add(Def{Name: "x", Read: func(*Phase) (float64, bool) { return 1, true }})
	if len(All()) != n+1 || ByName("x") == nil || Version() == v {
		t.Fatal("not added")
	}
	remove()
	if len(All()) != n || ByName("x") != nil {
		t.Fatal("not removed")
	}
}
